/**
 * Finds where this worker may create call cgroups: its own cgroup (from
 * /proc/self/cgroup) inside the mounted hierarchies (from mountinfo), if the
 * directories are writable and, on version 2, the controllers are delegated.
 */
import os from 'node:os';
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CALL_CGROUP_PREFIX, CGROUP_CONTROLLERS, type CgroupController, type CgroupHost, leftByDeadWorker } from './cgroup.js';
import { isProcessAlive } from './process-tree.js';

interface CgroupMount {
  version: 1 | 2;
  mountPoint: string;
  /** The hierarchy path the mount shows at its mount point (a container sees only its own subtree). */
  root: string;
  controllers: string[];
}

/** Parses /proc/self/mountinfo for cgroup mounts. */
export function parseCgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right) continue;
    const fields = left.split(' ');
    const [fsType, , superOptions = ''] = right.split(' ');
    if (fsType !== 'cgroup' && fsType !== 'cgroup2') continue;
    mounts.push({
      version: fsType === 'cgroup' ? 1 : 2,
      root: fields[3],
      mountPoint: fields[4],
      controllers: fsType === 'cgroup' ? superOptions.split(',') : [],
    });
  }
  return mounts;
}

/** Parses /proc/self/cgroup: version-1 controller → path, and the version-2 path under key ''. */
export function parseOwnCgroups(text: string): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!match) continue;
    if (match[1] === '') own.set('', match[2]);
    for (const controller of match[1].split(',')) if (controller) own.set(controller.replace(/^name=/, ''), match[2]);
  }
  return own;
}

function ownDir(mount: CgroupMount, ownPath: string): string {
  const rel = mount.root !== '/' && ownPath.startsWith(mount.root) ? ownPath.slice(mount.root.length) : ownPath;
  return path.join(mount.mountPoint, rel);
}

/** Removes empty call cgroups a crashed worker left behind; busy ones stay. */
async function sweepStale(parent: string): Promise<void> {
  for (const entry of await readdir(parent, { withFileTypes: true }).catch(() => [])) {
    if (entry.isDirectory() && leftByDeadWorker(entry.name, isProcessAlive)) await rmdir(path.join(parent, entry.name)).catch(() => undefined);
  }
}

/** Checks that call cgroups can be made (and removed) in `parent`. */
async function writable(parent: string): Promise<string> {
  const probe = path.join(parent, `${CALL_CGROUP_PREFIX}probe-${process.pid}`);
  await mkdir(probe);
  await rmdir(probe);
  await sweepStale(parent);
  return parent;
}

const reason = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;

async function v1Host(mounts: CgroupMount[], own: Map<string, string>): Promise<CgroupHost> {
  const parents: CgroupHost['parents'] = {};
  const problems: string[] = [];
  for (const controller of CGROUP_CONTROLLERS) {
    const mount = mounts.find((m) => m.version === 1 && m.controllers.includes(controller));
    if (!mount) continue;
    try {
      parents[controller] = await writable(ownDir(mount, own.get(controller) ?? '/'));
    } catch (err) {
      problems.push(`${controller}: ${reason(err)}`);
    }
  }
  if (!Object.keys(parents).length) throw new Error(`cgroup v1 hierarchies are not writable (${problems.join(', ') || 'none mounted'})`);
  return { version: 1, parents, cpus: callCpus() };
}

async function delegated(dir: string): Promise<CgroupController[]> {
  const enabled = (await readFile(path.join(dir, 'cgroup.subtree_control'), 'utf8').catch(() => '')).trim().split(/\s+/);
  return CGROUP_CONTROLLERS.filter((c) => enabled.includes(c));
}

/**
 * Version 2 allows processes only in leaves: call cgroups go beside the
 * worker's own leaf, in a parent whose controllers are delegated to it
 * (systemd's Delegate=yes), or under the hierarchy's root when the worker
 * sits there and may enable them itself.
 */
async function v2Host(mount: CgroupMount, own: Map<string, string>): Promise<CgroupHost> {
  const mine = ownDir(mount, own.get('') ?? '/');
  const atRoot = path.resolve(mine) === path.resolve(mount.mountPoint);
  // One by one: a controller the kernel lacks must not keep the others off.
  if (atRoot) for (const c of CGROUP_CONTROLLERS) await writeFile(path.join(mine, 'cgroup.subtree_control'), `+${c}`).catch(() => undefined);
  const parent = atRoot ? mine : path.dirname(mine);
  const usable = await delegated(parent);
  if (!usable.length) throw new Error(`cgroup v2: no pids, memory or cpu controller is delegated at ${parent}`);
  await writable(parent);
  const parents = Object.fromEntries(usable.map((c) => [c, parent])) as Partial<Record<CgroupController, string>>;
  return { version: 2, parents, cpus: callCpus() };
}

/** One call may use all CPUs but one, so the worker itself always has a core. */
function callCpus(): number {
  return Math.max(1, os.availableParallelism() - 1);
}

/** Where call cgroups can go on this machine; throws with the reason when nowhere. */
export async function discoverCgroupHost(): Promise<CgroupHost> {
  const mounts = parseCgroupMounts(await readFile('/proc/self/mountinfo', 'utf8'));
  const own = parseOwnCgroups(await readFile('/proc/self/cgroup', 'utf8'));
  const v1 = mounts.filter((m) => m.version === 1 && m.controllers.some((c) => (CGROUP_CONTROLLERS as readonly string[]).includes(c)));
  if (v1.length) return v1Host(mounts, own);
  const v2 = mounts.find((m) => m.version === 2);
  if (!v2) throw new Error('no cgroup hierarchy is mounted');
  return v2Host(v2, own);
}
