// `npm run bench -- --cluster`: what a step costs on the real cluster
// (PostgreSQL, two Temporal nodes behind the balancer) next to the dev
// server, and what three workers get through together. Prints figures and
// writes bench/results/cluster-*.json. Not a test: nothing here asserts a timing.
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import pino from 'pino';
import { clusterDown } from '../src/cluster/down.js';
import { dynamicConfigFlags } from './dynamic-config.js';
import { DYNAMIC_CONFIG } from '../src/cluster/temporal.js';
import { clusterUp } from '../src/cluster/up.js';
import { connectTether, startRun, type TetherClient } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import type { Script } from '../src/scripted/script.js';
import { startScriptedServer } from '../src/scripted/server.js';
import { startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { createTetherWorker, WORKFLOW_BUNDLE_OPTIONS } from '../src/worker.js';

const STEPS = Number(process.env.BENCH_CLUSTER_STEPS ?? 100);
const RUNS = Number(process.env.BENCH_CLUSTER_RUNS ?? 30);
const RUN_STEPS = Number(process.env.BENCH_CLUSTER_RUN_STEPS ?? 20);
const SHARDS = process.env.BENCH_CLUSTER_SHARDS ? Number(process.env.BENCH_CLUSTER_SHARDS) : undefined;
const quiet = pino({ level: 'silent' });
const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };

// The same step as bench/run.ts: a model call and a read of a file of its own.
const scripts: Record<string, Script> = {
  'bench-noop': {
    steps: [{ reply: { toolCalls: [{ name: 'read_file', args: { path: 'f/{{step}}' } }] }, repeat: Math.max(STEPS, RUN_STEPS) }],
    after: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] },
  } as Script,
};

/** A workspace holding the files the steps read. */
async function workspace(steps: number): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-bench-cluster-'));
  await mkdir(path.join(dir, 'f'));
  await Promise.all(Array.from({ length: steps + 1 }, (_, i) => writeFile(path.join(dir, 'f', String(i)), 'ok')));
  return dir;
}

function spec(steps: number, ws: string) {
  return { goal: 'bench', model: 'scripted:bench-noop', workspace: ws, critic: { policy: 'off' as const }, limits: { maxSteps: steps, maxRuntime: '2h' } };
}

/** Milliseconds per step of one sequential run of `steps` steps. */
async function perStep(tc: TetherClient, taskQueue: string, steps: number, label: string): Promise<number> {
  const warm = await startRun(tc, spec(5, await workspace(5)), { id: `warm-${label}-${Date.now()}`, taskQueue });
  await waitForResult(tc, warm.runId);
  const ws = await workspace(steps);
  const started = performance.now();
  const { runId } = await startRun(tc, spec(steps, ws), { id: `step-${label}-${Date.now()}`, taskQueue });
  const result = await waitForResult(tc, runId);
  return (performance.now() - started) / result.steps;
}

/** Steps per second with `runs` runs of `steps` steps at once, and each run's mean step. */
async function throughput(tc: TetherClient, taskQueue: string, runs: number, steps: number, label: string): Promise<Record<string, number>> {
  const spaces = await Promise.all(Array.from({ length: runs }, () => workspace(steps)));
  const started = performance.now();
  const ids = await Promise.all(spaces.map((ws, i) => startRun(tc, spec(steps, ws), { id: `tp-${label}-${Date.now()}-${i}`, taskQueue })));
  const results = await Promise.all(ids.map(({ runId }) => waitForResult(tc, runId)));
  const seconds = (performance.now() - started) / 1000;
  const total = results.reduce((sum, r) => sum + r.steps, 0);
  return { runs, stepsPerRun: steps, seconds, stepsPerSecond: total / seconds, msPerStepWithinARun: (seconds * 1000) / steps };
}

/** The dev server as bench/run.ts starts it, with the cluster's dynamic config, and one in-process worker. */
async function devServerFigures(scriptedUrl: string, bundle: { code: string }): Promise<Record<string, number>> {
  const db = path.join(await mkdtemp(path.join(os.tmpdir(), 'tether-bench-db-')), 'temporal.db');
  const { flags } = dynamicConfigFlags(readFileSync(DYNAMIC_CONFIG, 'utf8'));
  const server = await startDevServer({ port: await freePort(), db, headless: true, stdio: 'ignore', extraArgs: flags });
  const taskQueue = `bench-dev-${Date.now()}`;
  const { worker, connection } = await createTetherWorker({ address: server.address, taskQueue, workflowBundle: bundle, scriptedUrl, logger: quiet });
  const running = worker.run();
  const tc = await connectTether({ address: server.address, taskQueue });
  try {
    const msPerStep = await perStep(tc, taskQueue, STEPS, 'dev');
    const load = await throughput(tc, taskQueue, RUNS, RUN_STEPS, 'dev');
    return { msPerStep, stepsPerSecondOneWorker: load.stepsPerSecond };
  } finally {
    worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await tc.close();
    await server.stop();
  }
}

/** The cluster: the same in-process worker for the per-step figure, then the cluster's own three workers under load. */
async function clusterFigures(scriptedUrl: string, bundle: { code: string }): Promise<Record<string, number | string>> {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'tether-bench-cluster-'));
  // Searchable by the postgres user PostgreSQL runs as under root.
  await chmod(parent, 0o755);
  const dir = path.join(parent, 'cluster');
  process.env.TETHER_SCRIPTED_URL = scriptedUrl;
  const up = await clusterUp({
    dir,
    port: 0,
    uiPort: 0,
    panelPort: 0,
    postgresPort: 0,
    nodeBasePort: 0,
    shards: SHARDS,
    workers: 3,
    workerGrace: '5s',
    restart: 'unless-stopped',
    log: (m) => process.stderr.write(`${m}\n`),
  });
  const address = up.state.balancer!.address;
  const taskQueue = `bench-cluster-${Date.now()}`;
  const { worker, connection } = await createTetherWorker({ address, taskQueue, workflowBundle: bundle, scriptedUrl, logger: quiet });
  const running = worker.run();
  const tc = await connectTether({ address, taskQueue: up.state.workers[0].taskQueue });
  try {
    const msPerStep = await perStep(tc, taskQueue, STEPS, 'cluster');
    worker.shutdown();
    await running.catch(() => undefined);
    const load = await throughput(tc, tc.taskQueue, RUNS, RUN_STEPS, 'cluster');
    return {
      msPerStep,
      stepsPerSecondThreeWorkers: load.stepsPerSecond,
      msPerStepWithinARunUnderLoad: load.msPerStepWithinARun,
      shards: up.state.shards,
      startSeconds: up.seconds,
    };
  } finally {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await tc.close();
    await clusterDown({ dir, log: () => {} });
  }
}

function print(title: string, figures: Record<string, number | string>): void {
  process.stdout.write(`\n${title}\n`);
  for (const [key, value] of Object.entries(figures)) {
    process.stdout.write(`  ${key.padEnd(34)} ${typeof value === 'number' && !Number.isInteger(value) ? value.toFixed(2) : value}\n`);
  }
}

/** Runs the cluster benchmark: dev server first, then the cluster, on the same machine and the same steps. */
export async function runClusterBench(): Promise<void> {
  const scripted = await startScriptedServer({ port: 0, scripts });
  const bundle = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: quietBundler });
  try {
    const dev = await devServerFigures(scripted.url, bundle);
    print(`dev server (SQLite file), one in-process worker, ${STEPS}-step run; ${RUNS} runs × ${RUN_STEPS} steps at once`, dev);
    const cluster = await clusterFigures(scripted.url, bundle);
    print(`cluster (PostgreSQL, 2 nodes, balancer): same worker for the step; ${RUNS} runs × ${RUN_STEPS} steps on its 3 workers`, cluster);
    const ratio = { clusterStepOverDevStep: Number(cluster.msPerStep) / dev.msPerStep, target: 1.5 };
    print('per-step ratio (target ≤ 1.5)', ratio);
    const results = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      steps: STEPS,
      runs: RUNS,
      runSteps: RUN_STEPS,
      dev,
      cluster,
      ratio,
    };
    const dir = fileURLToPath(new URL('./results/', import.meta.url));
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, `cluster-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
    process.stdout.write(`\nwrote ${path.relative(process.cwd(), file)}\n`);
  } finally {
    await scripted.close();
  }
}

// `npm run bench -- --cluster` runs it; so does `node --import tsx bench/cluster.ts`.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await runClusterBench();
