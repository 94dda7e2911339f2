// `npm run bench`: the raw engine floor with stock and tuned limits, where a
// Tether step's time goes, orchestration overhead, the CLI's start per verb,
// kill latency, emergency-stop latency and history size, on dev servers of its own. Prints figures and
// writes JSON to bench/results/. Not a test: nothing here asserts a timing.
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import proto from '@temporalio/proto';

const { temporal } = proto;
import pino from 'pino';
import { createActivities } from '../src/activities/index.js';
import { connectTether, controlRun, getStatus, startRun, waitForResult, type TetherClient } from '../src/client/runs.js';
import { PriceTable } from '../src/llm/pricing.js';
import { TranscriptCache } from '../src/llm/transcript-cache.js';
import { type ScriptedServer, startScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { createTetherWorker, installRuntime, WORKFLOW_BUNDLE_OPTIONS } from '../src/worker.js';
import { isProcessAlive } from '../src/tools/process-runner.js';
import { processesWithCommandLine } from '../src/tools/process-tree.js';
import type { ToolResult, TranscriptMessage } from '../src/api/types.js';
import type { LlmReply } from '../src/activities/llm.js';
import type { ToolName } from '../src/api/spec.js';
import { measureFloor, type FloorFigures } from './engine-floor.js';
import { cliStart } from './cli-start.js';
import { breakDown, percentile, type StepBreakdown } from './history-breakdown.js';

const median = (values: number[]) => percentile(values, 50);

const STEPS = Number(process.env.BENCH_STEPS ?? 200);
const KILL_TRIALS = Number(process.env.BENCH_KILL_TRIALS ?? 20);
const LONG_STEPS = Number(process.env.BENCH_LONG_STEPS ?? 1_000);
const FLOOR_ACTIVITIES = Number(process.env.BENCH_FLOOR_ACTIVITIES ?? 200);
const FLOOR_TIMERS = Number(process.env.BENCH_FLOOR_TIMERS ?? 3);
const CLI_TRIALS = Number(process.env.BENCH_CLI_TRIALS ?? 20);
const RETRY_TRIALS = Number(process.env.BENCH_RETRY_TRIALS ?? 10);
/** Rounds of one bound and one shared STEPS-step run, alternating which goes first. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const quiet = pino({ level: 'silent' });
// Tools run in their own PID namespace: the hanging one is found by its command line.
const HANG_SECONDS = `300.${process.pid}`;

// Each step reads a file of its own: a real tool call that does no I/O worth measuring, and no two alike
// (a repeated identical call would rightly look stuck to the run).
const noopStep = { reply: { toolCalls: [{ name: 'read_file', args: { path: 'f/{{step}}' } }] } };
const scripts: Record<string, Script> = {
  'bench-noop': { steps: [{ ...noopStep, repeat: STEPS }], after: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } } as Script,
  'bench-large': {
    steps: [{ reply: { toolCalls: [{ name: 'shell', args: { command: 'head -c 200000 /dev/zero | tr "\\0" x' } }] }, repeat: 50 }],
    after: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] },
  } as Script,
  'bench-hang': { steps: [{ reply: { toolCalls: [{ name: 'shell', args: { command: `sleep ${HANG_SECONDS}` } }] } }] } as Script,
  'bench-retry': { steps: [{ reply: { text: 'done' }, faults: [{ kind: '503' }] }] } as Script,
  'bench-fail': { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'exit 1' } }] } } as Script,
  'bench-long': {
    steps: [{ ...noopStep, repeat: Math.max(1, LONG_STEPS) }],
    after: { toolCalls: [{ name: 'finish', args: { summary: 'long done' } }] },
  } as Script,
};

/** History size summed over every execution of a run id (a run may have continued as new). */
async function historyBytes(tc: TetherClient, workflowId: string): Promise<{ bytes: number; events: number; executions: number }> {
  let bytes = 0;
  let events = 0;
  let executions = 0;
  for await (const info of tc.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await tc.client.workflow.getHandle(workflowId, info.runId).fetchHistory();
    bytes += temporal.api.history.v1.History.encode(history).finish().length;
    events += history.events?.length ?? 0;
    executions++;
  }
  return { bytes, events, executions };
}

function workspace(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'tether-bench-'));
}

/** A workspace holding the files the no-op steps read. */
async function noopWorkspace(steps: number): Promise<string> {
  const dir = await workspace();
  await mkdir(path.join(dir, 'f'));
  await Promise.all(Array.from({ length: steps + 1 }, (_, i) => writeFile(path.join(dir, 'f', String(i)), 'ok')));
  return dir;
}

/** The raw engine floor on fresh file-backed servers, stock limits then tuned. */
async function engineFloor(): Promise<Record<'defaults' | 'tuned', FloorFigures>> {
  const opts = { activities: FLOOR_ACTIVITIES, timers: FLOOR_TIMERS };
  const defaults = await measureFloor({ ...opts, tuned: false });
  const tuned = await measureFloor({ ...opts, tuned: true });
  return { defaults, tuned };
}

/** One run's step segments from its history (the latest execution). */
async function runBreakdown(tc: TetherClient, workflowId: string): Promise<StepBreakdown> {
  const history = await tc.client.workflow.getHandle(workflowId).fetchHistory();
  return breakDown(history.events ?? []);
}

async function main(): Promise<void> {
  // Before any worker: the SDK's own logs stay quiet, so the figures are readable.
  installRuntime(quiet);
  const results: Record<string, unknown> = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, steps: STEPS };
  const floor = await engineFloor();
  results.engineFloor = floor;
  const db = path.join(await mkdtemp(path.join(os.tmpdir(), 'tether-bench-db-')), 'temporal.db');
  const server = await startDevServer({ port: await freePort(), uiPort: await freePort(), db, headless: true, stdio: 'ignore' });
  const scripted = await startScriptedServer({ port: 0, scripts });
  const address = server.address;
  const taskQueue = `bench-${Date.now()}`;
  const workflowBundle = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: quietBundler });
  const workerOptions = {
    address,
    workflowBundle,
    scriptedUrl: scripted.url,
    logger: quiet,
    workspaceRoot: await mkdtemp(path.join(os.tmpdir(), 'tether-bench-ws-')),
  };
  // The default: runs bound to the worker holding their workspace (its own task queue).
  const { worker, connection } = await createTetherWorker({ ...workerOptions, taskQueue });
  // Workspaces on shared storage: every activity on the workflow's own queue.
  const shared = await createTetherWorker({ ...workerOptions, taskQueue: `${taskQueue}-shared`, sharedWorkspaces: true, connection });
  const floorWorker = await Worker.create({
    connection,
    taskQueue: `${taskQueue}-floor`,
    workflowBundle: await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./workflows/floor.ts', import.meta.url)), logger: quietBundler }),
    activities: { async noop() {} },
  });
  const running = Promise.all([worker.run(), shared.worker.run(), floorWorker.run()]);
  const tc = await connectTether({ address, taskQueue });
  try {
    const spec = (model: string, workspace?: string, limits: Record<string, unknown> = {}) => ({
      goal: 'bench',
      model,
      ...(workspace ? { workspace } : {}),
      critic: { policy: 'off' as const },
      limits: { maxSteps: 1_000_000, maxRuntime: '2h', ...limits },
    });

    // Warm-up so the first measurement does not pay for caches and connections.
    await waitForResult(tc, (await startRun(tc, spec('scripted:bench-noop', await noopWorkspace(5), { maxSteps: 5 }), { id: `warm-${Date.now()}` })).runId);

    // Bound and shared runs alternate, and each figure is the median of its rounds: on a shared machine the load
    // moves by tens of percent from one minute to the next, and one run of each compared noise with noise.
    const timedRun = async (queue: string, round: number) => {
      const started = performance.now();
      const run = await startRun(tc, spec('scripted:bench-noop', await noopWorkspace(STEPS)), {
        id: `bench-${queue}-${round}-${Date.now()}`,
        taskQueue: queue,
      });
      const result = await waitForResult(tc, run.runId);
      return { runId: run.runId, steps: result.steps, ms: performance.now() - started };
    };
    const bound: Awaited<ReturnType<typeof timedRun>>[] = [];
    const sharedRuns: Awaited<ReturnType<typeof timedRun>>[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const boundFirst = round % 2 === 0;
      if (boundFirst) bound.push(await timedRun(taskQueue, round));
      sharedRuns.push(await timedRun(`${taskQueue}-shared`, round));
      if (!boundFirst) bound.push(await timedRun(taskQueue, round));
    }
    const agentMs = median(bound.map((r) => r.ms));
    const sharedMs = median(sharedRuns.map((r) => r.ms));
    const { runId } = bound[0];
    const activities = bound[0].steps * 2 - 1;

    const floorStart = performance.now();
    await tc.client.workflow.execute('floorWorkflow', { taskQueue: `${taskQueue}-floor`, workflowId: `bench-floor-${Date.now()}`, args: [activities] });
    const floorMs = performance.now() - floorStart;

    const inProcessMs = await inProcessLoop(scripted.url);
    await sleep(2_000); // visibility is eventually consistent
    const small = await historyBytes(tc, runId);
    const perStep = {
      agentRunMsPerStep: agentMs / STEPS,
      floorMsPerStep: floorMs / STEPS,
      inProcessMsPerStep: inProcessMs / STEPS,
      ratioAgentToFloor: agentMs / floorMs,
      sharedWorkspacesMsPerStep: sharedMs / STEPS,
      ratioSharedWorkspacesToFloor: sharedMs / floorMs,
      ratioBoundToShared: agentMs / sharedMs,
      rounds: ROUNDS,
      activitiesPerRun: activities,
      historyBytesPerStepSmallOutput: small.bytes / bound[0].steps,
      historyEvents: small.events,
      executions: small.executions,
    };
    results.orchestration = perStep;
    print('orchestration', perStep);
    const steps = { bound: await runBreakdown(tc, runId), shared: await runBreakdown(tc, sharedRuns[0].runId) };
    results.stepBreakdown = steps;
    printBreakdown(floor, steps, { bound: agentMs / activities, shared: sharedMs / activities });

    if (CLI_TRIALS > 0) {
      results.cliStart = await cliStart(address, runId, CLI_TRIALS);
      print('CLI wall time per verb (fresh process, bin/tether.js)', results.cliStart as Record<string, number>);
    }

    const largeRun = await startRun(tc, spec('scripted:bench-large'), { id: `bench-large-${Date.now()}` });
    const large = await waitForResult(tc, largeRun.runId);
    await sleep(2_000);
    const largeHistory = await historyBytes(tc, largeRun.runId);
    results.largeOutputs = { steps: large.steps, historyBytesPerStepLargeOutput: largeHistory.bytes / large.steps, toolOutputBytes: 200_000 };
    print('history with 200 KB tool outputs', results.largeOutputs as Record<string, number>);

    results.kill = await killLatency(tc);
    print('kill latency (kill Update return → tool process gone)', results.kill as Record<string, number>);

    results.heartbeatCost = await heartbeatCost(tc, server.pid);
    print('server CPU while a tool runs (heartbeats are its only traffic)', results.heartbeatCost as Record<string, number>);

    results.emergencyStop = await emergencyStopLatency(tc);
    print('emergency stop (fifth failure → status)', results.emergencyStop as Record<string, number>);

    results.retryDelay = await retryDelay(tc, scripted);
    print('model call retry after a 503 (the jittered delay asked for → the retry reaching the provider)', results.retryDelay as Record<string, number>);

    if (LONG_STEPS > 0) {
      results.long = await longRun(tc, `${taskQueue}-shared`);
      print(`${LONG_STEPS}-step run`, results.long as Record<string, number>);
    }
  } finally {
    for (const w of [worker, shared.worker, floorWorker]) if (w.getState() === 'RUNNING') w.shutdown();
    await running.catch(() => undefined);
    // The SDK runtime shuts down with its last connection; until then it holds the process open.
    await connection.close();
    await tc.close();
    await scripted.close();
    await server.stop();
  }
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`\nwrote ${path.relative(process.cwd(), file)}\n`);
}

/** The same loop without Temporal: the activity functions called in-process. */
async function inProcessLoop(scriptedUrl: string): Promise<number> {
  const dir = await noopWorkspace(STEPS);
  const acts = createActivities({
    env: process.env,
    workspaceRoot: dir,
    scriptedUrl: async () => scriptedUrl,
    prices: new PriceTable(),
    transcripts: new TranscriptCache(),
    logger: quiet,
  });
  const env = new MockActivityEnvironment();
  const transcript: TranscriptMessage[] = [{ role: 'user', content: 'bench', source: 'goal' }];
  const runId = `inproc-${Date.now()}`;
  const start = performance.now();
  for (let step = 0; step < STEPS; step++) {
    const context = {
      epoch: 0,
      from: Math.max(0, transcript.length - 2),
      messages: transcript.slice(Math.max(0, transcript.length - 2)),
      length: transcript.length,
    };
    const reply: LlmReply = await env.run(acts.callModel, {
      runId,
      step,
      model: 'scripted:bench-noop',
      context,
      tools: ['read_file', 'finish'] as ToolName[],
      timeoutMs: 60_000,
    });
    transcript.push({ role: 'assistant', content: reply.text, toolCalls: reply.toolCalls });
    for (const call of reply.toolCalls) {
      const result: ToolResult = await env.run(acts.runTool, { runId, workspace: dir, call, timeoutMs: 60_000 });
      transcript.push({ role: 'tool', toolCallId: call.id, toolName: call.name, content: result.output, success: result.success });
    }
  }
  return performance.now() - start;
}

async function killLatency(tc: TetherClient): Promise<Record<string, number>> {
  const samples: number[] = [];
  for (let i = 0; i < KILL_TRIALS; i++) {
    const dir = await workspace();
    const { runId } = await startRun(
      tc,
      { goal: 'hang', model: 'scripted:bench-hang', workspace: dir, critic: { policy: 'off' } },
      { id: `bench-kill-${Date.now()}-${i}` },
    );
    let pid = 0;
    while (!pid) {
      pid = processesWithCommandLine(`sleep ${HANG_SECONDS}`)[0] ?? 0;
      if (!pid) await sleep(20);
    }
    await controlRun(tc, runId, 'kill', { reason: 'bench' });
    const returned = performance.now();
    while (isProcessAlive(pid)) await sleep(2);
    samples.push(performance.now() - returned);
    await waitForResult(tc, runId);
  }
  return { trials: samples.length, p50Ms: percentile(samples, 50), p95Ms: percentile(samples, 95), maxMs: Math.max(...samples) };
}

/** CPU seconds the server process has used (utime + stime, from /proc). */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** The server's CPU per second, idle and while one tool call heartbeats: what the heartbeat cadence costs it. */
async function heartbeatCost(tc: TetherClient, serverPid: number): Promise<Record<string, number>> {
  const window = 5_000;
  const sample = async () => {
    const before = await cpuMs(serverPid);
    await sleep(window);
    return ((await cpuMs(serverPid)) - before) / (window / 1000);
  };
  const idle = await sample();
  const { runId } = await startRun(
    tc,
    { goal: 'hang', model: 'scripted:bench-hang', workspace: await workspace(), critic: { policy: 'off' } },
    { id: `bench-heartbeat-${Date.now()}` },
  );
  while (!processesWithCommandLine(`sleep ${HANG_SECONDS}`).length) await sleep(20);
  const busy = await sample();
  await controlRun(tc, runId, 'kill', { reason: 'bench' });
  await waitForResult(tc, runId);
  return { serverCpuMsPerSecondIdle: idle, serverCpuMsPerSecondOneTool: busy, costOfOneToolCpuMsPerSecond: busy - idle };
}

async function emergencyStopLatency(tc: TetherClient): Promise<Record<string, number>> {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    const { runId } = await startRun(tc, { goal: 'fail', model: 'scripted:bench-fail', critic: { policy: 'off' } }, { id: `bench-estop-${Date.now()}-${i}` });
    let seenAt = 0;
    while (!seenAt) {
      const status = await getStatus(tc, runId).catch(() => null);
      if (status?.emergencyStop.active) seenAt = Date.now();
      else await sleep(5);
    }
    const history = await tc.client.workflow.getHandle(runId).fetchHistory();
    const completions = (history.events ?? []).filter((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
    const fifthTool = completions[9];
    const at = Number(fifthTool?.eventTime?.seconds ?? 0) * 1000 + Math.floor((fifthTool?.eventTime?.nanos ?? 0) / 1e6);
    samples.push(seenAt - at);
    await controlRun(tc, runId, 'kill', { reason: 'bench' });
  }
  return { trials: samples.length, p50Ms: percentile(samples, 50), maxMs: Math.max(...samples) };
}

/**
 * How late a model call's first retry comes: the delay the activity asked for (its failure's `nextRetryDelay`,
 * from the history) against the gap between the two requests at the provider. A server whose timer queue
 * reads a second ahead fires every shorter delay at about a second (docs/operations.md, "The tuned engine").
 */
async function retryDelay(tc: TetherClient, scripted: ScriptedServer): Promise<Record<string, number>> {
  const late: number[] = [];
  const asked: number[] = [];
  for (let i = 0; i < RETRY_TRIALS; i++) {
    const { runId } = await startRun(tc, { goal: 'retry', model: 'scripted:bench-retry', critic: { policy: 'off' } }, { id: `bench-retry-${Date.now()}-${i}` });
    await waitForResult(tc, runId);
    const [first, second] = scripted.requestsFor(runId);
    const history = await tc.client.workflow.getHandle(runId).fetchHistory();
    const delay = (history.events ?? []).map((e) => e.activityTaskStartedEventAttributes?.lastFailure?.applicationFailureInfo?.nextRetryDelay).find(Boolean);
    if (!first || !second || !delay) throw new Error(`retry probe ${runId}: no retried request or no delay in its history`);
    const askedMs = Number(delay.seconds ?? 0) * 1000 + (delay.nanos ?? 0) / 1e6;
    asked.push(askedMs);
    late.push(second.at - first.at - askedMs);
  }
  return {
    trials: late.length,
    askedMinMs: Math.round(Math.min(...asked)),
    askedMaxMs: Math.round(Math.max(...asked)),
    lateP50Ms: Math.round(percentile(late, 50)),
    lateMaxMs: Math.round(Math.max(...late)),
  };
}

async function longRun(tc: TetherClient, taskQueue: string): Promise<Record<string, number>> {
  const start = performance.now();
  const { runId } = await startRun(
    tc,
    {
      goal: 'long',
      model: 'scripted:bench-long',
      workspace: await noopWorkspace(LONG_STEPS),
      critic: { policy: 'off' },
      limits: { maxSteps: LONG_STEPS + 10, maxRuntime: '2h', maxContextChars: 50_000 },
    },
    { id: `bench-long-${Date.now()}`, taskQueue },
  );
  const result = await waitForResult(tc, runId);
  const chain: number[] = [];
  for await (const info of tc.client.workflow.list({ query: `WorkflowId = '${runId}'` })) chain.push(info.historyLength ?? 0);
  // The last execution's segments: where a long run's step goes once its transcript has grown.
  const last = await runBreakdown(tc, runId);
  return {
    steps: result.steps,
    seconds: (performance.now() - start) / 1000,
    chainLength: chain.length,
    maxHistoryEvents: Math.max(...chain),
    lastExecutionWorkflowTaskWaitMs: last.workflowTaskWaitMs,
    lastExecutionWorkflowTaskProcessingMs: last.workflowTaskProcessingMs,
    lastExecutionActivityDispatchMs: last.activityDispatchMs,
    lastExecutionActivityWorkMs: last.activityWorkMs,
  };
}

/** Where the time goes, per activity: the floor both ways and a Tether step both ways, from server event timestamps. */
function printBreakdown(floor: Record<string, FloorFigures>, steps: Record<string, StepBreakdown>, msPerActivity: Record<string, number>): void {
  const rows: Array<[string, StepBreakdown & { msPerActivity: number }]> = [
    ['raw floor, stock limits', floor.defaults!],
    ['raw floor, tuned', floor.tuned!],
    ['tether step, bound', { ...steps.bound!, msPerActivity: msPerActivity.bound! }],
    ['tether step, shared', { ...steps.shared!, msPerActivity: msPerActivity.shared! }],
  ];
  const head = ['ms per activity', 'wft wait', 'wft wait p95', 'wft processing', 'act dispatch', 'act work'];
  process.stdout.write(`\nwhere the time goes (mean ms, from history event timestamps)\n  ${''.padEnd(26)}${head.map((h) => h.padStart(16)).join('')}\n`);
  for (const [name, r] of rows) {
    const cells = [r.msPerActivity, r.workflowTaskWaitMs, r.workflowTaskWaitP95Ms, r.workflowTaskProcessingMs, r.activityDispatchMs, r.activityWorkMs];
    process.stdout.write(`  ${name.padEnd(26)}${cells.map((c) => c.toFixed(1).padStart(16)).join('')}\n`);
  }
  for (const [name, f] of Object.entries(floor)) {
    process.stdout.write(
      `  floor ${name}: ${f.msPerTimer.toFixed(1)} ms per 1 ms timer, list shows a finished workflow after ${f.visibilityLagP50Ms.toFixed(1)} ms (p50)\n`,
    );
  }
}

function print(title: string, figures: Record<string, number>): void {
  process.stdout.write(`\n${title}\n`);
  for (const [key, value] of Object.entries(figures)) process.stdout.write(`  ${key.padEnd(34)} ${Number.isInteger(value) ? value : value.toFixed(3)}\n`);
}

const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };

// `npm run bench -- --cluster`: the same steps on a real cluster (bench/cluster.ts).
if (process.argv.includes('--cluster')) await (await import('./cluster.js')).runClusterBench();
else await main();
