import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { findTemporalCli } from '../src/server/temporal-cli.js';
import { WORKFLOW_BUNDLE_OPTIONS } from '../src/worker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `host:port` of the test run's Temporal dev server. */
    temporalAddress: string;
    /** Its SQLite file (in a temp dir removed at teardown). */
    temporalDbPath: string;
    /** The `temporal` binary (real ELF) that runs it. */
    temporalCliPath: string;
    /** The workflow bundle, built once per run. */
    workflowBundlePath: string;
  }
}

const say = (m: string) => process.stderr.write(`[global-setup] ${m}\n`);

/** One real Temporal dev server and one workflow bundle for the whole test run. */
export default async function setup(project: TestProject) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-test-'));
  const db = path.join(dir, 'temporal.db');
  // Find (or install) the CLI first so an install failure reads as one clear error.
  const cli = await findTemporalCli({ log: say });
  const [started, bundled] = await Promise.allSettled([
    startDevServer({ cli, port: await freePort(), db, headless: true, log: say }),
    bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} } as never }),
  ]);
  if (started.status === 'rejected' || bundled.status === 'rejected') {
    if (started.status === 'fulfilled') await started.value.stop();
    await rm(dir, { recursive: true, force: true });
    throw started.status === 'rejected' ? started.reason : (bundled as PromiseRejectedResult).reason;
  }
  const server = started.value;
  const bundle = bundled.value;
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
