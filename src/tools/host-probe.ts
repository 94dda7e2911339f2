/**
 * What confinement this machine allows, found by trying it once: bubblewrap,
 * plain namespaces (unshare), call cgroups, rlimits. Workers in unprivileged
 * containers often lack some of it; the tools degrade to what works and say so.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { discoverCgroupHost } from './cgroup-host.js';
import type { CgroupHost } from './cgroup.js';

/** Whether a mechanism works here, and if not, why. */
export type Capability = { ok: true } | { ok: false; reason: string };

/** The confinement this machine offers tool calls; probed once per worker. */
export interface SandboxHost {
  root: boolean;
  /** Absolute paths of the helper programs found (a tool's PATH must not choose them). */
  bin: { sh: string; bash: string | null; bwrap: string | null; unshare: string | null; prlimit: string | null; setpriv: string | null; ip: string | null };
  bwrap: Capability;
  /** PID, mount and network namespaces through unshare(1), used where bwrap is not. */
  namespaces: Capability;
  cgroup: CgroupHost | null;
  cgroupProblem?: string;
}

const SEARCH_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

function findProgram(name: string): string | null {
  for (const dir of `${process.env.PATH ?? ''}:${SEARCH_PATH}`.split(':')) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** Runs a probe command; resolves with its failure text, or null when it exited 0. */
function attempt(file: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000, env: { PATH: SEARCH_PATH } }, (err, _stdout, stderr) => {
      if (!err) return resolve(null);
      resolve((stderr.trim().split('\n').pop() || err.message).slice(0, 300));
    });
  });
}

/** The namespace flags every bwrap call uses, tried here exactly as the tools will. */
export const BWRAP_PROBE_ARGS = [
  '--ro-bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
  '--tmpfs',
  '/tmp',
  '--unshare-pid',
  '--unshare-net',
  '--unshare-ipc',
  '--unshare-uts',
  '--unshare-cgroup-try',
  '--die-with-parent',
  '--new-session',
  '--cap-drop',
  'ALL',
];

/** unshare(1) flags for a call's own PID, mount (for /proc) and network namespaces. */
export function unshareArgs(root: boolean, network: boolean): string[] {
  return ['--pid', '--fork', '--kill-child', '--mount-proc', ...(network ? [] : ['--net']), ...(root ? [] : ['--map-root-user'])];
}

async function capability(bin: string | null, missing: string, args: string[], trueBin: string): Promise<Capability> {
  if (!bin) return { ok: false, reason: missing };
  const failure = await attempt(bin, [...args, '--', trueBin]);
  return failure === null ? { ok: true } : { ok: false, reason: failure };
}

/** Probes this machine. Never throws: what does not work is reported as such. */
export async function probeSandboxHost(): Promise<SandboxHost> {
  const root = process.getuid?.() === 0;
  const names = ['bash', 'bwrap', 'unshare', 'prlimit', 'setpriv', 'ip'] as const;
  const found = Object.fromEntries(names.map((n) => [n, findProgram(n)])) as Record<(typeof names)[number], string | null>;
  const bin = { sh: findProgram('sh') ?? '/bin/sh', ...found };
  const trueBin = findProgram('true') ?? '/bin/true';
  const [bwrap, namespaces] = await Promise.all([
    capability(bin.bwrap, 'bwrap is not installed (Debian: apt-get install bubblewrap)', BWRAP_PROBE_ARGS, trueBin),
    capability(bin.unshare, 'unshare (util-linux) is not installed', unshareArgs(root, false), trueBin),
  ]);
  try {
    return { root, bin, bwrap, namespaces, cgroup: await discoverCgroupHost() };
  } catch (err) {
    return { root, bin, bwrap, namespaces, cgroup: null, cgroupProblem: (err as Error).message };
  }
}

let probed: Promise<SandboxHost> | undefined;
/** This worker's probe, run once and shared. */
export function sandboxHost(): Promise<SandboxHost> {
  probed ??= probeSandboxHost();
  return probed;
}
