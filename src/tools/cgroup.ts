/**
 * One cgroup per tool call, under the worker's own cgroup so that whatever
 * limits the worker also limits its tools. Version 1 (one hierarchy per
 * controller) and version 2 (one unified hierarchy) differ only in file names.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { signalProcess } from './process-tree.js';

/** Call cgroups are named with this prefix beside the worker's own, so a sweep finds what a crash left. */
export const CALL_CGROUP_PREFIX = 'tether-';

export const CGROUP_CONTROLLERS = ['pids', 'memory', 'cpu'] as const;
export type CgroupController = (typeof CGROUP_CONTROLLERS)[number];

/** Where this worker may make call cgroups: per controller, a writable parent directory. */
export interface CgroupHost {
  version: 1 | 2;
  parents: Partial<Record<CgroupController, string>>;
  /** CPUs one call may use at most (a quota, so a busy tool cannot starve the worker). */
  cpus: number;
}

export interface CgroupLimits {
  maxProcesses: number;
  memoryBytes: number;
}

/** A call's cgroup: its directory per controller (one shared directory on version 2). */
export interface CallCgroup {
  version: 1 | 2;
  dirs: Partial<Record<CgroupController, string>>;
}

const FILES = {
  1: { memoryMax: 'memory.limit_in_bytes', swapMax: 'memory.memsw.limit_in_bytes', memoryEvents: 'memory.oom_control' },
  2: { memoryMax: 'memory.max', swapMax: 'memory.swap.max', memoryEvents: 'memory.events' },
} as const;
const CPU_PERIOD_US = 100_000;

async function tryWrite(file: string, value: string): Promise<boolean> {
  return writeFile(file, value).then(
    () => true,
    () => false,
  );
}

/**
 * A call's cgroup is named for the worker that made it: workers started side by side share the parent, and
 * one sweeping what a crash left must not take a live worker's cgroup between its creation and its first process.
 */
function callCgroupName(workerPid: number, name: string): string {
  return `${CALL_CGROUP_PREFIX}${workerPid}-${name}`;
}

/** Whether a call cgroup was left by a worker that is gone (named by `callCgroupName`); any other is not ours to remove. */
export function leftByDeadWorker(dirName: string, alive: (pid: number) => boolean): boolean {
  const owner = new RegExp(`^${CALL_CGROUP_PREFIX}(\\d+)-`).exec(dirName);
  return owner !== null && !alive(Number(owner[1]));
}

/**
 * Creates a call's cgroup with its limits; the caller moves the call's first
 * process in (see `procsFiles`). `name` must be unique on this machine.
 */
export async function createCallCgroup(host: CgroupHost, name: string, limits: CgroupLimits): Promise<CallCgroup> {
  const dirs: CallCgroup['dirs'] = {};
  for (const controller of CGROUP_CONTROLLERS) {
    const parent = host.parents[controller];
    if (!parent) continue;
    dirs[controller] = path.join(parent, callCgroupName(process.pid, name));
    await mkdir(dirs[controller]!, { recursive: true });
  }
  try {
    await writeLimits(host, dirs, limits);
  } catch (err) {
    for (const dir of new Set(Object.values(dirs))) await rmdir(dir).catch(() => undefined);
    throw err;
  }
  return { version: host.version, dirs };
}

async function writeLimits(host: CgroupHost, dirs: CallCgroup['dirs'], limits: CgroupLimits): Promise<void> {
  const files = FILES[host.version];
  if (dirs.pids) await writeFile(path.join(dirs.pids, 'pids.max'), String(limits.maxProcesses));
  if (dirs.memory) {
    await writeFile(path.join(dirs.memory, files.memoryMax), String(limits.memoryBytes));
    // Swap would let a hog slip past the limit; without swap accounting the file is absent and nothing slips.
    await tryWrite(path.join(dirs.memory, files.swapMax), host.version === 1 ? String(limits.memoryBytes) : '0');
  }
  if (dirs.cpu) {
    const quota = String(Math.round(host.cpus * CPU_PERIOD_US));
    if (host.version === 1) await writeFile(path.join(dirs.cpu, 'cpu.cfs_quota_us'), quota);
    else await writeFile(path.join(dirs.cpu, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
  }
}

/** The `cgroup.procs` files a process writes its pid to, to join the call's cgroup with all it will start. */
export function procsFiles(group: CallCgroup): string[] {
  return [...new Set(Object.values(group.dirs))].map((dir) => path.join(dir, 'cgroup.procs'));
}

/** Pids of the processes in the call's cgroup. */
export async function cgroupMembers(group: CallCgroup): Promise<number[]> {
  const pids = new Set<number>();
  for (const file of procsFiles(group)) {
    const text = await readFile(file, 'utf8').catch(() => '');
    for (const line of text.split('\n')) if (line.trim()) pids.add(Number(line));
  }
  return [...pids];
}

async function counter(file: string, key: string): Promise<number> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const line = text.split('\n').find((l) => l.startsWith(`${key} `));
  return line ? Number(line.slice(key.length + 1)) || 0 : 0;
}

/** Whether the call hit its limits: processes the kernel killed for memory, forks it refused. */
export async function limitEvents(group: CallCgroup): Promise<{ oomKills: number; forkRefusals: number }> {
  const oomKills = group.dirs.memory ? await counter(path.join(group.dirs.memory, FILES[group.version].memoryEvents), 'oom_kill') : 0;
  const forkRefusals = group.dirs.pids ? await counter(path.join(group.dirs.pids, 'pids.events'), 'max') : 0;
  return { oomKills, forkRefusals };
}

/** SIGKILLs everything in the cgroup until it is empty (or 5 s pass), then removes it. */
export async function destroyCallCgroup(group: CallCgroup): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const members = await cgroupMembers(group);
    if (!members.length || Date.now() > deadline) break;
    const killFile = group.version === 2 && group.dirs.pids ? path.join(group.dirs.pids, 'cgroup.kill') : null;
    if (killFile && existsSync(killFile)) await tryWrite(killFile, '1');
    for (const pid of members) signalProcess(pid, 'SIGKILL');
    await sleep(20);
  }
  for (const dir of new Set(Object.values(group.dirs))) {
    // A cgroup whose last task just exited can refuse removal for a moment.
    for (let i = 0; i < 50; i++) {
      if (
        await rmdir(dir).then(
          () => true,
          (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
        )
      )
        break;
      await sleep(20);
    }
  }
}
