import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, fchmodSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SANDBOX_HOME } from '../tools/jail-plan.js';
import { isProcessAlive, killProcessGroup } from '../tools/process-tree.js';
import type { TrackedProcess } from './state.js';

/** The kernel's start time of a process (clock ticks since boot, /proc/<pid>/stat field 22); null when it is gone. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the recorded process still runs: same pid, same start time, not a zombie. */
export function isRunning(proc: Omit<TrackedProcess, 'restarts'> | null | undefined): boolean {
  if (!proc || !isProcessAlive(proc.pid)) return false;
  const now = processStartTime(proc.pid);
  return now === null || now === proc.startTime;
}

export interface Spawned extends Omit<TrackedProcess, 'restarts'> {
  child: ChildProcess;
  log: string;
}

/**
 * Starts a process in its own session (so a terminal's Ctrl-C reaches only
 * the supervisor, which stops things in order), output appended to `log`.
 */
export async function spawnDetached(
  command: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv; log: string; cwd?: string; uid?: number; gid?: number },
): Promise<Spawned> {
  await mkdir(path.dirname(opts.log), { recursive: true });
  // Private to its owner: a log can hold what only an operator may see (the panel prints its token link).
  const fd = openSync(opts.log, 'a', 0o600);
  try {
    fchmodSync(fd, 0o600);
    const child = spawn(command, args, { env: opts.env, cwd: opts.cwd, detached: true, stdio: ['ignore', fd, fd], uid: opts.uid, gid: opts.gid });
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
    const pid = child.pid;
    if (pid === undefined) throw new Error(`could not run ${command}: ${(await spawnError).message}`);
    return { pid, startTime: processStartTime(pid) ?? '', child, log: opts.log };
  } finally {
    closeSync(fd);
  }
}

/** Resolves true once the process has exited, false if it still runs after `timeoutMs`. */
export async function waitForExit(proc: TrackedProcess, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(proc)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

/** SIGTERM to the process's group, SIGKILL after `graceMs`; a process that is not (or no longer) ours is left alone. */
export async function stopProcess(proc: TrackedProcess | null | undefined, graceMs: number): Promise<void> {
  if (!proc || !isRunning(proc)) return;
  await killProcessGroup(proc.pid, graceMs);
}

const within = (p: string, root: string) => p === root || p.startsWith(`${root}${path.sep}`);

/**
 * Whether a process has a tool's environment: a tool's HOME is its workspace,
 * or the sandbox's own. An operator's shell that went into a workspace to look
 * has its own HOME, and is not a tool's.
 */
function hasToolHome(pid: number, root: string): boolean {
  const home = readFileSync(`/proc/${pid}/environ`, 'utf8')
    .split('\0')
    .find((entry) => entry.startsWith('HOME='))
    ?.slice('HOME='.length);
  return home !== undefined && (home === SANDBOX_HOME || within(home, root));
}

/**
 * Processes the workers' tools left behind under `root` (they run in their
 * own process groups, so a worker that was SIGKILLed cannot take them along):
 * working there, with a tool's environment. Linux only; empty elsewhere.
 */
export function processesUnder(root: string): number[] {
  const found: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const pid = Number(entry);
      if (within(readlinkSync(`/proc/${pid}/cwd`), root) && hasToolHome(pid, root) && isProcessAlive(pid)) found.push(pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** The last lines of a log file, each cut short (servers log stack traces), to quote in an error. */
export async function logTail(file: string, lines = 8): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .trimEnd()
    .split('\n')
    .slice(-lines)
    .map((line) => (line.length > 400 ? `${line.slice(0, 400)} …` : line))
    .join('\n');
}
