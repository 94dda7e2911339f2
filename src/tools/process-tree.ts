/**
 * What /proc says about processes (Linux): state, parent, group, start time,
 * and the identity that tells one process from a later one with the same pid.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcStat {
  state: string;
  ppid: number;
  pgrp: number;
  /** Clock ticks after boot; with the boot id it names a process uniquely. */
  startTime: string;
}

/** A process as it was when recorded: a pid alone repeats after a restart, this does not. */
export interface ProcessIdentity {
  pid: number;
  startTime: string;
  bootId: string;
}

const HAS_PROC = existsSync('/proc/self/stat');

/** Reads a process's stat line; null when it does not exist. */
export function procStat(pid: number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], ppid: Number(fields[1]), pgrp: Number(fields[2]), startTime: fields[19] };
  } catch {
    return null;
  }
}

const dead = (stat: ProcStat | null) => stat === null || stat.state === 'Z' || stat.state === 'X';

/**
 * Whether a process is running. A zombie counts as dead: it runs nothing and
 * holds nothing, and where PID 1 does not reap orphans one can linger forever.
 */
export function isProcessAlive(pid: number): boolean {
  if (HAS_PROC) return !dead(procStat(pid));
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Every live process with its stat, read once. */
export function liveProcesses(): Map<number, ProcStat> {
  const all = new Map<number, ProcStat>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat && !dead(stat)) all.set(Number(entry), stat);
  }
  return all;
}

/**
 * Live processes whose command line contains `text`. A tool runs in its own
 * PID namespace, so a pid it prints means nothing outside; its command line
 * finds it from the host (tests, benchmarks).
 */
export function processesWithCommandLine(text: string): number[] {
  const found: number[] = [];
  for (const pid of liveProcesses().keys()) {
    if (pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(text)) found.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Live processes in a process group. */
export function groupMembers(pgid: number, all = liveProcesses()): number[] {
  return [...all].filter(([, stat]) => stat.pgrp === pgid).map(([pid]) => pid);
}

/** Live descendants of a process (not itself), by walking parent links. */
export function descendants(root: number, all = liveProcesses()): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, stat] of all) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), pid]);
  const found: number[] = [];
  const queue = [...(children.get(root) ?? [])];
  while (queue.length) {
    const pid = queue.shift()!;
    found.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

/** Whether any live (non-zombie) process remains in the group. */
export function isProcessGroupAlive(pgid: number): boolean {
  if (HAS_PROC) return groupMembers(pgid).length > 0;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

let bootId: string | undefined;
/** This boot's id: pids and start times are only comparable within one boot. */
export function currentBootId(): string {
  bootId ??= readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  return bootId;
}

/** The identity of a live process; null when it is gone or /proc cannot say. */
export function identify(pid: number): ProcessIdentity | null {
  const stat = procStat(pid);
  if (dead(stat)) return null;
  try {
    return { pid, startTime: stat!.startTime, bootId: currentBootId() };
  } catch {
    return null;
  }
}

/** Whether the process recorded as `identity` is still the one running under its pid. */
export function isSameProcess(identity: ProcessIdentity): boolean {
  const now = identify(identity.pid);
  return now !== null && now.startTime === identity.startTime && now.bootId === identity.bootId;
}

/** Sends a signal, ignoring processes that are already gone. */
export function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** SIGTERM to a whole process group, SIGKILL after the grace time; resolves once nothing in it is left alive. */
export async function killProcessGroup(pgid: number, graceMs: number): Promise<void> {
  if (!isProcessGroupAlive(pgid)) return;
  signalProcess(-pgid, 'SIGTERM');
  const termDeadline = Date.now() + graceMs;
  while (Date.now() < termDeadline) {
    if (!isProcessGroupAlive(pgid)) return;
    await sleep(25);
  }
  signalProcess(-pgid, 'SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (Date.now() < killDeadline && isProcessGroupAlive(pgid)) await sleep(25);
}
