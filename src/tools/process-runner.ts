import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessProgress {
  pid: number;
  pgid: number;
  bytes: number;
  elapsedMs: number;
  tail: string;
}

export interface RunProcessOptions {
  command: string;
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** The full combined stdout+stderr is streamed here. */
  outputFile?: string;
  /** Characters of output kept for the caller (head and tail). */
  maxOutputChars?: number;
  onProgress?: (progress: ProcessProgress) => void;
  progressIntervalMs?: number;
  /** Time between SIGTERM and SIGKILL to the process group. */
  killGraceMs?: number;
}

export interface ProcessOutcome {
  pid: number;
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

/** Reads a process's state and group from /proc (Linux); null when it does not exist. */
function procStat(pid: number): { state: string; pgrp: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], pgrp: Number(fields[2]) };
  } catch {
    return null;
  }
}

const HAS_PROC = existsSync('/proc/self/stat');

/**
 * Whether a process is running. A zombie counts as dead: it runs nothing and
 * holds nothing, and where PID 1 does not reap orphans one can linger forever.
 */
export function isProcessAlive(pid: number): boolean {
  if (HAS_PROC) {
    const stat = procStat(pid);
    return stat !== null && stat.state !== 'Z' && stat.state !== 'X';
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether any live (non-zombie) process remains in the group. */
export function isProcessGroupAlive(pgid: number): boolean {
  if (HAS_PROC) {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = procStat(Number(entry));
      if (stat && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X') return true;
    }
    return false;
  }
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/** SIGTERM to the whole group, SIGKILL after the grace time, and back only when nothing in it is left alive. */
export async function killProcessGroup(pgid: number, graceMs: number): Promise<void> {
  if (!isProcessGroupAlive(pgid)) return;
  signalGroup(pgid, 'SIGTERM');
  const termDeadline = Date.now() + graceMs;
  while (Date.now() < termDeadline) {
    if (!isProcessGroupAlive(pgid)) return;
    await sleep(25);
  }
  signalGroup(pgid, 'SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (Date.now() < killDeadline && isProcessGroupAlive(pgid)) await sleep(25);
}

/**
 * Runs a shell command as the leader of its own process group, so that a
 * timeout, an abort or the end of the command can take every descendant with
 * it. A failing command is a value (its exit code), never an exception.
 */
export async function runProcess(opts: RunProcessOptions): Promise<ProcessOutcome> {
  const started = Date.now();
  const maxChars = opts.maxOutputChars ?? 16_000;
  const graceMs = opts.killGraceMs ?? 2_000;
  let file: WriteStream | undefined;
  if (opts.outputFile) {
    await mkdir(path.dirname(opts.outputFile), { recursive: true });
    file = createWriteStream(opts.outputFile);
  }
  const child = spawn(SHELL, ['-c', opts.command], { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  try {
    await spawned;
  } catch (err) {
    file?.end();
    throw err;
  }
  const pid = child.pid!;
  // Listen now: 'close' may fire before the exit handling below gets to wait for it.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  // Head and tail are kept; the middle of a huge output only goes to the file.
  let head = '';
  let tail = '';
  let chars = 0;
  let bytes = 0;
  const keep = Math.ceil(maxChars / 2);
  const onData = (chunk: Buffer) => {
    bytes += chunk.length;
    file?.write(chunk);
    let text = chunk.toString('utf8');
    chars += text.length;
    if (head.length < keep) {
      const taken = text.slice(0, keep - head.length);
      head += taken;
      text = text.slice(taken.length);
    }
    if (text) tail = (tail + text).slice(-keep);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);

  let timedOut = false;
  let aborted = false;
  let killing: Promise<void> | undefined;
  const kill = () => (killing ??= killProcessGroup(pid, graceMs));
  const timer = setTimeout(() => {
    timedOut = true;
    void kill();
  }, opts.timeoutMs);
  const onAbort = () => {
    aborted = true;
    void kill();
  };
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const progress = opts.onProgress
    ? setInterval(() => opts.onProgress!({ pid, pgid: pid, bytes, elapsedMs: Date.now() - started, tail: tail.slice(-1_000) }), opts.progressIntervalMs ?? 250)
    : undefined;

  const exit = await exited;
  // Background jobs must not outlive the tool that started them.
  await kill();
  clearTimeout(timer);
  if (progress) clearInterval(progress);
  opts.signal?.removeEventListener('abort', onAbort);
  await Promise.race([closed, sleep(1_000)]);
  if (file) await new Promise<void>((resolve) => file!.end(resolve));

  const where = opts.outputFile ? `; full output in ${path.basename(opts.outputFile)}` : '';
  const omitted = chars - head.length - tail.length;
  const output = omitted > 0 ? `${head}\n… [${omitted} characters omitted${where}] …\n${tail}` : head + tail;
  return {
    pid,
    exitCode: exit.code,
    signal: exit.signal,
    timedOut,
    aborted,
    output,
    truncated: omitted > 0,
    bytes,
    durationMs: Date.now() - started,
  };
}
