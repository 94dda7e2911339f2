import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import pino from 'pino';
import { inject } from 'vitest';
import type { RunSpecInput } from '../../src/api/spec.js';
import type { RunResult, RunStatus } from '../../src/api/types.js';
import { connectTether, getStatus, startRun, type TetherClient } from '../../src/client/runs.js';
import { waitForResult } from '../../src/client/run-result.js';
import { startScriptedServer, type ScriptedServer } from '../../src/scripted/server.js';
import type { Script } from '../../src/scripted/script.js';
import { createTetherWorker, WORKFLOW_BUNDLE_OPTIONS, type TetherWorker, type TetherWorkerOptions } from '../../src/worker.js';
import { eventually } from './eventually.js';

let bundle: Promise<{ code: string }> | undefined;

/** The workflow bundle, built once per test file (from the global setup's file when there is one). */
export function workflowBundle(): Promise<{ code: string }> {
  bundle ??= (async () => {
    const file = inject('workflowBundlePath');
    if (file) return { code: await readFile(file, 'utf8') };
    return bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: quietBundlerLogger });
  })();
  return bundle;
}

export const quietBundlerLogger = {
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error(message: string, meta?: unknown) {
    console.error(message, meta);
  },
  log() {},
};

export interface Harness {
  address: string;
  tc: TetherClient;
  scripted: ScriptedServer;
  worker: TetherWorker;
  taskQueue: string;
  workspaceRoot: string;
  start(spec: RunSpecInput, id?: string): Promise<string>;
  result(runId: string): Promise<RunResult>;
  status(runId: string): Promise<RunStatus>;
  /** Polls status until the predicate holds (or fails after timeoutMs). */
  until(runId: string, predicate: (s: RunStatus) => boolean, timeoutMs?: number): Promise<RunStatus>;
  stop(): Promise<void>;
}

let counter = 0;

/** A scripted model server, a worker on its own task queue and a client, against the shared dev server. */
export async function startHarness(
  opts: { scripts?: Record<string, Script>; worker?: Partial<TetherWorkerOptions>; env?: NodeJS.ProcessEnv } = {},
): Promise<Harness> {
  const address = inject('temporalAddress');
  const taskQueue = `test-${process.pid}-${Date.now()}-${counter++}`;
  const scripted = await startScriptedServer({ port: 0, scripts: opts.scripts ?? {} });
  const workspaceRoot = await mkdtemp(path.join(os.tmpdir(), 'tether-ws-'));
  const { worker, connection } = await createTetherWorker({
    address,
    taskQueue,
    workflowBundle: await workflowBundle(),
    scriptedUrl: scripted.url,
    workspaceRoot,
    logger: pino({ level: process.env.TETHER_TEST_LOG ?? 'silent' }),
    env: opts.env ?? process.env,
    shutdownGraceMs: 2_000,
    ...opts.worker,
  });
  const running = worker.run();
  const tc = await connectTether({ address, taskQueue });
  const harness: Harness = {
    address,
    tc,
    scripted,
    worker,
    taskQueue,
    workspaceRoot,
    async start(spec, id) {
      const { runId } = await startRun(tc, spec, { id: id ?? `t-${Date.now()}-${counter++}`, taskQueue });
      return runId;
    },
    result: (runId) => waitForResult(tc, runId),
    status: (runId) => getStatus(tc, runId),
    // A status query fails until a worker has picked the run up: that counts as "not yet".
    until: (runId, predicate, timeoutMs = 30_000) => eventually(`status of ${runId}`, () => getStatus(tc, runId), predicate, { timeoutMs }),
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
      await tc.close();
      await scripted.close();
    },
  };
  return harness;
}
