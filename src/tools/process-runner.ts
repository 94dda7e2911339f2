import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CallTree, terminateCallTree } from './call-tree.js';
import type { CallCgroup } from './cgroup.js';
import { OutputCapture } from './output-capture.js';
import type { OutputLog } from './output-log.js';
import { identify, type ProcessIdentity } from './process-tree.js';

export { isProcessAlive } from './process-tree.js';

export interface ProcessProgress {
  pid: number;
  pgid: number;
  bytes: number;
  elapsedMs: number;
  tail: string;
  /** The spawned process as it can be recognised after a crash (pid, start time, boot). */
  identity: ProcessIdentity | null;
}

export interface RunProcessOptions {
  /** The program and its arguments; without it, `command` runs in bash. */
  argv?: string[];
  command?: string;
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Where the combined stdout+stderr goes (capped on disk); closed when the process ends. */
  log?: OutputLog;
  /** Characters of output kept for the caller (head and tail). */
  maxOutputChars?: number;
  onProgress?: (progress: ProcessProgress) => void;
  progressIntervalMs?: number;
  /** Time between SIGTERM and SIGKILL. */
  killGraceMs?: number;
  /** The call's cgroup: its processes belong to the call wherever they went. */
  cgroup?: CallCgroup;
  /** The spawned program only launches the command in a sandbox; it is not sent SIGTERM itself. */
  wrapped?: boolean;
}

export interface ProcessOutcome {
  pid: number;
  identity: ProcessIdentity | null;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
  output: string;
  truncated: boolean;
  bytes: number;
  durationMs: number;
}

const SHELL = existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';

async function spawnProcess(opts: RunProcessOptions): Promise<ChildProcess> {
  const [file, ...args] = opts.argv ?? [SHELL, '-c', opts.command ?? ''];
  // Detached: the child leads its own process group, which a kill can take whole.
  const child = spawn(file, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  return child;
}

/** Feeds both pipes to the capture and the log, pausing them while the log's disk writes catch up. */
function pipeOutput(child: ChildProcess, capture: OutputCapture, log: OutputLog | undefined): Promise<void> {
  const streams = [child.stdout!, child.stderr!];
  const onData = (chunk: Buffer) => {
    capture.add(chunk);
    if (log && !log.write(chunk)) {
      for (const stream of streams) stream.pause();
      void log.drained().then(() => {
        for (const stream of streams) stream.resume();
      });
    }
  };
  for (const stream of streams) stream.on('data', onData);
  return new Promise((resolve) => child.once('close', () => resolve()));
}

/** Kills the tree at the timeout or on abort; `stop` clears the watch. */
function supervise(opts: RunProcessOptions, kill: () => Promise<void>) {
  const state = { timedOut: false, aborted: false };
  const timer = setTimeout(() => {
    state.timedOut = true;
    void kill();
  }, opts.timeoutMs);
  const onAbort = () => {
    state.aborted = true;
    void kill();
  };
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const stop = () => {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  };
  return { state, stop };
}

/**
 * Runs a command as the leader of its own process group (inside whatever
 * sandbox `argv` sets up), so that a timeout, an abort or the end of the
 * command takes every process of the call with it. A failing command is a
 * value (its exit code), never an exception.
 */
export async function runProcess(opts: RunProcessOptions): Promise<ProcessOutcome> {
  const started = Date.now();
  let child: ChildProcess;
  try {
    // Setting up a sandbox takes a moment: a call cancelled meanwhile starts nothing.
    opts.signal?.throwIfAborted();
    child = await spawnProcess(opts);
  } catch (err) {
    await opts.log?.close();
    throw err;
  }
  const pid = child.pid!;
  const identity = identify(pid);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const capture = new OutputCapture(opts.maxOutputChars ?? 16_000);
  const closed = pipeOutput(child, capture, opts.log);
  const tree: CallTree = { root: pid, rootIsWrapper: opts.wrapped ?? false, rootStartTime: identity?.startTime ?? '', cgroup: opts.cgroup };
  let killing: Promise<void> | undefined;
  const kill = () => (killing ??= terminateCallTree(tree, opts.killGraceMs ?? 2_000));
  const watch = supervise(opts, kill);
  // As often as the worker flushes heartbeats (src/worker.ts): a kill is delivered in a heartbeat's reply.
  const progress = opts.onProgress
    ? setInterval(() => {
        opts.onProgress!({ pid, pgid: pid, bytes: capture.bytes, elapsedMs: Date.now() - started, tail: capture.tail(1_000), identity });
      }, opts.progressIntervalMs ?? 100)
    : undefined;
  const exit = await exited;
  // Background jobs must not outlive the tool that started them.
  await kill();
  watch.stop();
  clearInterval(progress);
  await Promise.race([closed, sleep(1_000)]);
  await opts.log?.close();
  return {
    pid,
    identity,
    exitCode: exit.code,
    signal: exit.signal,
    ...watch.state,
    ...capture.result(opts.log?.relPath),
    bytes: capture.bytes,
    durationMs: Date.now() - started,
  };
}
