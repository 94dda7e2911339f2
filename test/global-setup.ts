import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { WORKFLOWS_PATH } from '../src/worker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalDbPath: string;
    temporalCliPath: string;
    workflowBundlePath: string;
  }
}

/** One real Temporal dev server and one workflow bundle for the whole test run. */
export default async function setup(project: TestProject) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-test-'));
  const db = path.join(dir, 'temporal.db');
  const [server, bundle] = await Promise.all([
    startDevServer({ port: await freePort(), db, headless: true, log: (m) => process.stderr.write(`${m}\n`) }),
    bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} } as never }),
  ]);
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  await writeFile(bundlePath, bundle.code);
  project.provide('temporalAddress', server.address);
  project.provide('temporalDbPath', db);
  project.provide('temporalCliPath', server.cli);
  project.provide('workflowBundlePath', bundlePath);
  return async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
