/**
 * Load: many concurrent runs on one worker, against a model that answers in
 * about 200 ms. All must complete; the figures are the worker's peak RSS,
 * throughput against the engine's floor, schedule-to-start latency (from the
 * runs' histories) and the workflow cache's forced evictions (from the SDK's
 * own metrics). The floor is measured in the same suite, on the same server:
 * as many raw Temporal workflows of a run's shape (a 200 ms "model" activity
 * a step, a no-op "tool" activity between), at once, on a bare SDK worker with
 * the same limits.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { startRun, type TetherClient } from '../../../src/client/runs.js';
import { workerTuningFromEnv, workflowStackTracesFromEnv } from '../../../src/worker-tuning.js';
import { installRuntime, workflowBundleOptions } from '../../../src/worker.js';
import { createLogger } from '../../../src/ops/logger.js';
import type { Script } from '../../../src/scripted/script.js';
import { type ChaosContext, inBatches, type Scenario } from '../context.js';
import { percentile } from '../report.js';
import { breakDown } from '../../history-breakdown.js';
import { descendantsCpuMs, ownCpuMs } from '../cpu-time.js';
import { EventType, eventMs, resultWithin, scriptedServer, type WorkerProcess } from '../stack.js';
import { completed, countTaskFailures, describe } from './fault-storm.js';

const TOOL_STEPS = 3;
const MODEL_MS = 200;
const script: Script = {
  steps: [{ reply: { toolCalls: [{ name: 'write_file', args: { path: 'l{{step}}.txt', content: '{{step}}' } }] }, repeat: TOOL_STEPS, delayMs: MODEL_MS }],
  after: { toolCalls: [{ name: 'finish', args: { summary: 'carried the load' } }] },
} as Script;
const HISTORY_SAMPLE = 100;
/**
 * The worker limits the load runs with (docs/operations.md, "Worker tuning", has the before and after).
 * CHAOS_LOAD_DEFAULTS=1 runs the SDK's defaults instead, to measure them.
 */
export const LOAD_TUNING: Record<string, string> = process.env.CHAOS_LOAD_DEFAULTS
  ? {}
  : { TETHER_WORKER_WORKFLOW_TASK_SLOTS: '10', TETHER_WORKER_CACHED_WORKFLOWS: '1200', TETHER_WORKER_STACK_TRACES: 'off' };
/** Whether the load's workflows record stack traces: a bundle setting, so the workers get bundles built to match. */
const STACK_TRACES = workflowStackTracesFromEnv(LOAD_TUNING);
const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };

export const load: Scenario = async (ctx) => {
  // CHAOS_LOAD_RUNS sizes the scenario by hand (a profile, a comparison of two builds) without the full thousand.
  const runs = Number(process.env.CHAOS_LOAD_RUNS) || (ctx.quick ? 50 : 1_000);
  const scripted = await scriptedServer({ load: script });
  const taskQueue = `chaos-load-${Date.now()}`;
  const floor = await engineFloor(ctx, runs);
  const floorSeconds = floor.seconds;
  const worker = await startLoadWorker(ctx, taskQueue, scripted.url);
  const tc = await ctx.stack.connect(taskQueue);
  try {
    const cpu = cpuMeter(ctx.stack.server.pid, worker.pid);
    const started = performance.now();
    const spec = { goal: 'load', model: 'scripted:load', critic: { policy: 'off' as const }, limits: { maxRuntime: '2h' } };
    const ids = await inBatches(Array.from({ length: runs }), 50, async (_, i) => (await startRun(tc, spec, { id: `load-${Date.now()}-${i}` })).runId);
    const results = await inBatches(ids, 100, (id) => resultWithin(tc, id, ctx.quick ? 300_000 : 3_600_000));
    const seconds = (performance.now() - started) / 1000;
    const cpuMs = cpu.sinceStart();
    const problems = results.flatMap((r, i) => (completed(r, 'carried the load') ? [] : [`run ${ids[i]} ended ${describe(r)}`]));
    const sample = ids.filter((_, i) => i % Math.max(1, Math.floor(runs / HISTORY_SAMPLE)) === 0);
    const latency = await scheduleToStart(tc, sample);
    const perRun = await wherePerRunTimeGoes(tc, sample);
    const evictions = await forcedEvictions(worker.metricsPort);
    const taskFailures = await countTaskFailures(tc, sample);
    problems.push(...taskFailures);
    return {
      name: 'load',
      faults: 0,
      runs,
      lost: problems.length,
      figures: {
        peakRssMiB: Math.round(worker.peakRssBytes() / 2 ** 20),
        runsPerSecond: round(runs / seconds),
        floorRunsPerSecond: round(runs / floorSeconds),
        shareOfFloorPct: Math.round((100 * floorSeconds) / seconds),
        activityScheduleToStartP95Ms: percentile(latency.activity, 95),
        retriedActivitiesInSample: latency.activityRetries,
        firstWorkflowTaskScheduleToStartP95Ms: percentile(latency.firstWorkflowTask, 95),
        workflowTaskScheduleToStartP95Ms: percentile(latency.workflowTask, 95),
        cacheEvictions: evictions,
        ...perRun,
        ...perRunCpu('floor', floor.cpuMs, runs),
        ...perRunCpu('tether', cpuMs, runs),
      },
      problems,
    };
  } finally {
    await tc.close();
    await worker.kill('SIGTERM');
    await scripted.close();
  }
};

/** A Tether worker with the load's limits, on a workflow bundle built to match them. */
async function startLoadWorker(ctx: ChaosContext, taskQueue: string, scriptedUrl: string): Promise<WorkerProcess> {
  const bundle = await bundleWorkflowCode({ ...workflowBundleOptions({ stackTraces: STACK_TRACES }), logger: quietBundler });
  const bundlePath = path.join(await ctx.stack.tempDir('load-bundle-'), 'workflow-bundle.js');
  await writeFile(bundlePath, bundle.code);
  // The bundle carries the stack-trace setting; the variable itself matters only to a worker that bundles at start.
  const { TETHER_WORKER_STACK_TRACES: _, ...limits } = LOAD_TUNING;
  return ctx.stack.startWorker({
    TETHER_TASK_QUEUE: taskQueue,
    TETHER_SCRIPTED_URL: scriptedUrl,
    TETHER_LOG_LEVEL: 'warn',
    ...limits,
    CHAOS_BUNDLE: bundlePath,
  });
}

const round = (n: number) => Math.round(n * 100) / 100;

/**
 * CPU ms over a phase: the dev server's, the worker process's own, its
 * children's (the checkpoint runner's git), and this process's (the client
 * that starts the runs and waits for them).
 */
type CpuReading = Record<'server' | 'worker' | 'workerChildren' | 'client', number | null>;

function cpuMeter(serverPid: number, workerPid: number) {
  const read = (): CpuReading => ({
    server: ownCpuMs(serverPid),
    worker: ownCpuMs(workerPid),
    workerChildren: descendantsCpuMs(workerPid),
    client: ownCpuMs(process.pid),
  });
  const start = read();
  return {
    sinceStart(): CpuReading {
      const end = read();
      const delta = (key: keyof CpuReading) => (end[key] === null || start[key] === null ? null : end[key] - start[key]);
      return { server: delta('server'), worker: delta('worker'), workerChildren: delta('workerChildren'), client: delta('client') };
    },
  };
}

/**
 * CPU ms per run, by process. The floor's "worker" is this process, client
 * included, and starts no children; Tether's worker children are the checkpoints' git.
 */
function perRunCpu(phase: 'floor' | 'tether', cpu: CpuReading, runs: number): Record<string, number> {
  const figures: Record<string, number> = {};
  const add = (name: string, ms: number | null) => {
    if (ms !== null) figures[`${phase}${name}CpuMsPerRun`] = Math.round(ms / runs);
  };
  add('Server', cpu.server);
  add('Worker', cpu.worker);
  if (phase === 'tether') {
    add('WorkerChildren', cpu.workerChildren);
    add('Client', cpu.client);
  }
  return figures;
}

/**
 * Seconds for `runs` raw Temporal workflows of a run's shape, started as the
 * Tether runs are, on a bare worker in this process with the load's limits.
 */
async function engineFloor(ctx: ChaosContext, runs: number): Promise<{ seconds: number; cpuMs: CpuReading }> {
  const workflowsPath = fileURLToPath(new URL('../../workflows/floor.ts', import.meta.url));
  const withoutStackTraces = fileURLToPath(new URL('../../../src/workflows/without-stack-traces.ts', import.meta.url));
  const workflowBundle = await bundleWorkflowCode({ workflowsPath, preloadModules: STACK_TRACES ? [] : [withoutStackTraces], logger: quietBundler });
  // The SDK in this process logs through a quiet logger, as the workers do, so the suite's own output stays readable.
  installRuntime(createLogger({ name: 'chaos-floor', level: 'warn' }));
  const connection = await NativeConnection.connect({ address: ctx.stack.server.address });
  const taskQueue = `chaos-floor-${Date.now()}`;
  const activities = { noop: async () => {}, model: () => sleep(MODEL_MS) };
  const worker = await Worker.create({ connection, taskQueue, workflowBundle, activities, ...workerTuningFromEnv(LOAD_TUNING) });
  const running = worker.run();
  const tc = await ctx.stack.connect(taskQueue);
  try {
    // The floor's worker runs in this process, with the client: its CPU is this process's.
    const cpu = cpuMeter(ctx.stack.server.pid, process.pid);
    const started = performance.now();
    const ids = await inBatches(Array.from({ length: runs }), 50, async (_, i) => {
      const handle = await tc.client.workflow.start('loadFloorWorkflow', { taskQueue, workflowId: `floor-${Date.now()}-${i}`, args: [TOOL_STEPS + 1] });
      return handle.workflowId;
    });
    await inBatches(ids, 100, (id) => tc.client.workflow.getHandle(id).result());
    const seconds = (performance.now() - started) / 1000;
    ctx.log(`load: engine floor ${runs} workflows in ${seconds.toFixed(1)} s`);
    return { seconds, cpuMs: cpu.sinceStart() };
  } finally {
    worker.shutdown();
    await running;
    await tc.close();
    await connection.close();
  }
}

/**
 * Scheduled → started, in ms, for every activity and workflow task in the runs' histories.
 * A run's first workflow task waits behind the start burst on the shared queue; the later ones
 * go to the worker's sticky queue, so they are counted apart.
 */
async function scheduleToStart(
  tc: TetherClient,
  ids: string[],
): Promise<{ activity: number[]; activityRetries: number; firstWorkflowTask: number[]; workflowTask: number[] }> {
  const activity: number[] = [];
  const firstWorkflowTask: number[] = [];
  const workflowTask: number[] = [];
  let activityRetries = 0;
  await inBatches(ids, 10, async (id) => {
    const events = (await tc.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const byId = new Map(events.map((e) => [Number(e.eventId), e]));
    for (const e of events) {
      // A retried activity's started event is its last attempt's: scheduled → started then spans the failed attempts and
      // their backoff, so only first attempts measure the queue; retries are counted apart.
      const started = e.activityTaskStartedEventAttributes;
      const activityScheduled = started && byId.get(Number(started.scheduledEventId));
      if (activityScheduled && (started.attempt ?? 1) <= 1) activity.push(eventMs(e) - eventMs(activityScheduled));
      else if (activityScheduled) activityRetries++;
      const taskScheduled =
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED && byId.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId));
      if (taskScheduled) (Number(taskScheduled.eventId) <= 2 ? firstWorkflowTask : workflowTask).push(eventMs(e) - eventMs(taskScheduled));
    }
  });
  return { activity, activityRetries, firstWorkflowTask, workflowTask };
}

/**
 * A sampled run's time, in ms summed over its history and averaged over the
 * sample: waiting for workflow tasks, the worker processing them (local
 * activities, the file tools, run inside), waiting for activities, and the
 * activities themselves (the model's 200 ms is there).
 */
async function wherePerRunTimeGoes(tc: TetherClient, ids: string[]): Promise<Record<string, number>> {
  const sums = { perRunWorkflowTaskWaitMs: 0, perRunWorkflowTaskProcessingMs: 0, perRunActivityWaitMs: 0, perRunActivityWorkMs: 0 };
  await inBatches(ids, 10, async (id) => {
    const b = breakDown((await tc.client.workflow.getHandle(id).fetchHistory()).events ?? []);
    sums.perRunWorkflowTaskWaitMs += (b.workflowTaskWaitMs * b.workflowTasks) / ids.length;
    sums.perRunWorkflowTaskProcessingMs += (b.workflowTaskProcessingMs * b.workflowTasks) / ids.length;
    sums.perRunActivityWaitMs += (b.activityDispatchMs * b.activities) / ids.length;
    sums.perRunActivityWorkMs += (b.activityWorkMs * b.activities) / ids.length;
  });
  return Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, Math.round(v)]));
}

/** The SDK's count of workflows pushed out of the worker's cache to make room. */
async function forcedEvictions(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('temporal_sticky_cache_total_forced_eviction'))
    .reduce((n, line) => n + Number(line.split(' ').at(-1)), 0);
}
