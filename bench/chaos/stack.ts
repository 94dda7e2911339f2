/**
 * The real processes a chaos scenario drives: a Temporal dev server of the
 * suite's own (free ports, its own SQLite file), the scripted model server,
 * and Tether workers as child processes that can be SIGKILLed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import proto, { type temporal } from '@temporalio/proto';
import { connectTether, getStatus, type TetherClient } from '../../src/client/runs.js';
import { waitForResult } from '../../src/client/run-result.js';
import type { RunResult } from '../../src/api/types.js';
import { startScriptedServer, type ScriptedServer } from '../../src/scripted/server.js';
import type { Script } from '../../src/scripted/script.js';
import { type DevServer, startDevServer } from '../../src/server/dev-server.js';
import { freePort } from '../../src/server/free-port.js';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../src/worker.js';

const WORKER_MAIN = fileURLToPath(new URL('./worker-main.ts', import.meta.url));
const EventType = proto.temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** A worker child process: its output so far, its peak RSS, and how to end it. */
export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  metricsPort: number;
  output(): string;
  /** VmHWM of the process as last sampled, in bytes. */
  peakRssBytes(): number;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Everything the suite shares: a dev server, a workflow bundle, a scratch directory. */
export interface Stack {
  server: DevServer;
  port: number;
  db: string;
  dir: string;
  bundlePath: string;
  /** Every worker started, so logs can be read and nothing outlives the suite. */
  workers: WorkerProcess[];
  connect(taskQueue: string): Promise<TetherClient>;
  startWorker(env: Record<string, string>): Promise<WorkerProcess>;
  /** A fresh scratch directory under the suite's own. */
  tempDir(prefix: string): Promise<string>;
  stop(): Promise<void>;
}

const quietBundler = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };

export async function startStack(): Promise<Stack> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-chaos-'));
  const db = path.join(dir, 'temporal.db');
  const port = await freePort();
  const server = await startDevServer({ port, db, headless: true, stdio: 'ignore' });
  const code = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: quietBundler });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  await writeFile(bundlePath, code.code);
  const workers: WorkerProcess[] = [];
  // Every worker child from its spawn on, so one still starting (a standby) does not outlive the suite either.
  const children: ChildProcess[] = [];
  let tempCount = 0;
  const stack: Stack = {
    server,
    port,
    db,
    dir,
    bundlePath,
    workers,
    connect: (taskQueue) => connectTether({ address: stack.server.address, taskQueue }),
    async startWorker(env) {
      const worker = await spawnWorker(path.join(dir, `worker-${children.length}.log`), children, {
        TEMPORAL_ADDRESS: stack.server.address,
        // The workers' own state (checkpoint repositories) stays in the suite's scratch directory, not the project's .tether.
        TETHER_HOME: path.join(dir, 'home'),
        TETHER_SHARED_WORKSPACES: '1',
        CHAOS_BUNDLE: bundlePath,
        CHAOS_WORKSPACES: path.join(dir, 'workspaces'),
        ...env,
      });
      workers.push(worker);
      return worker;
    },
    async tempDir(prefix) {
      const made = path.join(dir, `${prefix}-${tempCount++}`);
      await mkdir(made, { recursive: true });
      return made;
    },
    async stop() {
      await Promise.all(workers.map((w) => w.kill('SIGKILL')));
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await stack.server.stop();
    },
  };
  return stack;
}

/** Starts a worker child and resolves once it polls. */
async function spawnWorker(logFile: string, children: ChildProcess[], env: Record<string, string>): Promise<WorkerProcess> {
  const metricsPort = await freePort();
  // CHAOS_WORKER_NODE_ARGS: extra node flags for the worker children only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
  const nodeArgs = process.env.CHAOS_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', WORKER_MAIN], {
    env: { ...process.env, TETHER_LOG_LEVEL: 'info', CHAOS_METRICS_PORT: String(metricsPort), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  let peak = 0;
  const log = createWriteStream(logFile);
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const sampler = setInterval(() => (peak = Math.max(peak, vmHwm(child.pid!))), 500);
  void exited.then(() => clearInterval(sampler));
  await new Promise<void>((resolve, reject) => {
    // A standby replacement (CHAOS_STANDBY_FILE) waits for its kill before it counts as started: minutes, not seconds.
    const timer = setTimeout(() => reject(new Error(`worker did not start within 300 s:\n${output.slice(-2_000)}`)), 300_000);
    const check = () => {
      if (!output.includes('worker-ready')) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      resolve();
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited ${code} during start-up:\n${output.slice(-2_000)}`));
    });
  });
  return {
    child,
    pid: child.pid!,
    metricsPort,
    output: () => output,
    peakRssBytes: () => Math.max(peak, vmHwm(child.pid!)),
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}

/** The process's peak resident set (VmHWM), 0 once it is gone. */
function vmHwm(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** A scripted model server answering the given in-memory scripts. */
export function scriptedServer(scripts: Record<string, Script>): Promise<ScriptedServer> {
  return startScriptedServer({ port: 0, scripts });
}

/** A run that did not end in time, with what it was doing then. */
export interface Lost {
  lost: string;
}

/**
 * The run's result, or what it was doing when `timeoutMs` ran out. Waits
 * with the SDK's long poll, as the engine floor's client does (polling
 * describe for a thousand runs loaded the server and this process as much as
 * the runs did), cut off at the deadline so no call outlives the wait; a
 * failed wait (the server restarting) is retried.
 */
export async function resultWithin(tc: TetherClient, runId: string, timeoutMs: number): Promise<RunResult | Lost> {
  const handle = tc.client.workflow.getHandle(runId);
  const deadline = AbortSignal.timeout(timeoutMs);
  for (;;) {
    // One long poll for the result, as a client waiting on a run makes; the run's state is asked only when it gives none.
    const ended = await tc.client.withAbortSignal(deadline, () => waitForResult(tc, runId)).catch(() => null);
    if (ended) return ended;
    const described = await handle.describe().catch(() => null);
    if (described && described.status.name !== 'RUNNING') return waitForResult(tc, runId);
    if (deadline.aborted) return { lost: await whatItIsDoing(tc, runId) };
    await sleep(250);
  }
}

async function whatItIsDoing(tc: TetherClient, runId: string): Promise<string> {
  const handle = tc.client.workflow.getHandle(runId);
  const status = await getStatus(tc, runId).catch((err: Error) => ({ error: err.message }));
  const raw = (await handle.describe().catch(() => null))?.raw;
  const pending =
    raw?.pendingActivities?.map((a) => `${a.activityType?.name} attempt ${a.attempt}${a.lastFailure ? ` (${a.lastFailure.message?.slice(0, 200)})` : ''}`) ??
    [];
  const state = 'error' in status ? `status query failed: ${status.error}` : `state ${status.state} at step ${status.step}`;
  const task = raw?.pendingWorkflowTask;
  return `${state}; pending: ${pending.join('; ') || 'none'}${task ? `; a workflow task is pending (${task.state}, attempt ${task.attempt})` : ''}`;
}

/** Every event of every execution of the run (a run may continue as new). */
export async function runEvents(tc: TetherClient, runId: string): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  for await (const info of tc.client.workflow.list({ query: `WorkflowId = '${runId}'` })) {
    events.push(...((await tc.client.workflow.getHandle(runId, info.runId).fetchHistory()).events ?? []));
  }
  if (!events.length) events.push(...((await tc.client.workflow.getHandle(runId).fetchHistory()).events ?? []));
  return events;
}

/**
 * Workflow tasks that failed in the run's history: each is a bug (a handler threw, non-determinism, …).
 * "UnhandledCommand" is not: it is the server turning a completion back because a signal landed
 * while the run was completing or continuing as new, and the worker retries with the signal.
 */
export async function workflowTaskFailures(tc: TetherClient, runId: string): Promise<string[]> {
  const handle = tc.client.workflow.getHandle(runId);
  const events = (await handle.fetchHistory()).events ?? [];
  return events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
    .map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? 'workflow task failed')
    .filter((message) => message !== 'UnhandledCommand');
}

export function eventMs(event: HistoryEvent): number {
  return Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
}

export { EventType };
export type { HistoryEvent };
