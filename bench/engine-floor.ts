// The raw engine floor on a file-backed dev server of its own: one worker,
// sequential no-op activities, sequential 1 ms timers, and how long a finished
// workflow takes to show in the list. Run with stock limits and tuned ones.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { breakDown, percentile, type StepBreakdown } from './history-breakdown.js';

export interface FloorOptions {
  tuned: boolean;
  activities: number;
  timers: number;
  /** More start-dev flags, to try a value before it joins the tuned set (BENCH_FLOOR_EXTRA). */
  extraArgs?: string[];
}

export interface FloorFigures extends StepBreakdown {
  msPerActivity: number;
  msPerTimer: number;
  visibilityLagP50Ms: number;
}

const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };
let bundle: Promise<{ code: string }> | undefined;

export async function measureFloor(opts: FloorOptions): Promise<FloorFigures> {
  bundle ??= bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./workflows/floor.ts', import.meta.url)), logger: quietBundler });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-bench-floor-'));
  const server = await startDevServer({
    port: await freePort(),
    db: path.join(dir, 'temporal.db'),
    headless: true,
    stdio: 'ignore',
    tuned: opts.tuned,
    extraArgs: opts.extraArgs,
  });
  const connection = await NativeConnection.connect({ address: server.address });
  const taskQueue = `floor-${Date.now()}`;
  const worker = await Worker.create({ connection, taskQueue, workflowBundle: await bundle, activities: { async noop() {} } });
  const running = worker.run();
  const client = new Client({ connection: await Connection.connect({ address: server.address }) });
  try {
    // Warm-up: connections, caches, the rate limiter's burst spent as it would be in a long run.
    await client.workflow.execute('floorWorkflow', { taskQueue, workflowId: `warm-${Date.now()}`, args: [20] });
    const id = `floor-${Date.now()}`;
    let start = performance.now();
    await client.workflow.execute('floorWorkflow', { taskQueue, workflowId: id, args: [opts.activities] });
    const msPerActivity = (performance.now() - start) / opts.activities;
    const history = await client.workflow.getHandle(id).fetchHistory();
    start = performance.now();
    await client.workflow.execute('timerFloorWorkflow', { taskQueue, workflowId: `timers-${Date.now()}`, args: [opts.timers] });
    const msPerTimer = (performance.now() - start) / opts.timers;
    return { msPerActivity, msPerTimer, ...breakDown(history.events ?? []), visibilityLagP50Ms: await visibilityLag(client, taskQueue) };
  } finally {
    worker.shutdown();
    await running.catch(() => undefined);
    await client.connection.close();
    await connection.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** From a workflow's result to the list showing it Completed (what the panel's list waits for). */
async function visibilityLag(client: Client, taskQueue: string): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    const id = `vis-${Date.now()}-${i}`;
    await client.workflow.execute('floorWorkflow', { taskQueue, workflowId: id, args: [0] });
    const done = performance.now();
    for (;;) {
      const seen = await client.workflow.count(`WorkflowId = '${id}' AND ExecutionStatus = 'Completed'`);
      if (seen.count > 0) break;
      if (performance.now() - done > 30_000) throw new Error(`workflow ${id} never showed as Completed in the list`);
      await sleep(5);
    }
    samples.push(performance.now() - done);
  }
  return percentile(samples, 50);
}
