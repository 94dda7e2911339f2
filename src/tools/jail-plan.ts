/**
 * The command line that confines one tool call, from what the run asks
 * (`sandbox`) and what the machine allows (`SandboxHost`). Pure: no I/O, so
 * every combination is unit-tested.
 *
 * The chain, outermost first: join the call's cgroup (a tiny sh shim, so no
 * fork escapes before the limit applies) → die with the worker → namespaces
 * (bwrap, else unshare) → rlimits → `bash -c <command>`.
 */
import type { SandboxSpec } from '../api/spec.js';
import type { SandboxHost } from './host-probe.js';
import { unshareArgs } from './host-probe.js';

/** `bwrap`: the full sandbox; `containment`: own PID (and network) namespace only; `process-group`: neither. */
export type JailKind = 'bwrap' | 'containment' | 'process-group';

/** A path that holds secrets, hidden from the tool under an empty tmpfs (directory) or /dev/null (file). */
export interface HiddenPath {
  path: string;
  directory: boolean;
}

export interface JailRequest {
  command: string;
  /** Real path of the workspace: the only place a sandboxed tool may write, besides its private /tmp. */
  workspace: string;
  sandbox: SandboxSpec;
  timeoutMs: number;
  hidden: HiddenPath[];
  /** Files under hidden paths bound back read-only (a networked call's resolver configuration). */
  restore: string[];
  /** `cgroup.procs` files of the call's cgroup; empty without one. */
  cgroupProcs: string[];
  /** Which limits the call's cgroup enforces; rlimits stand in for the others. */
  cgroupLimits: { memory: boolean; processes: boolean; cpus: number };
}

export interface JailPlan {
  kind: JailKind;
  argv: string[];
  home: string;
  tmpdir: string;
  /** Set when the run gets less confinement than the default promises; shown in the run's warnings. */
  warning?: string;
}

export type PlanResult = { ok: true; plan: JailPlan } | { ok: false; error: string };

/** Where a bwrap-sandboxed tool's HOME is: inside its private /tmp, so nothing of the worker's home shows. */
export const SANDBOX_HOME = '/tmp/.home';

/**
 * The call's first process. It closes every descriptor above stderr: the worker's own are close-on-exec, but one it
 * inherited from whatever started it is not, and would reach the tool through every wrapper and the sandbox (a file
 * outside the workspace, open for writing). Then it joins the call's cgroups (`n`, then n cgroup.procs files) and
 * becomes the call. Closing a descriptor above 9 needs bash; with sh alone only the cgroups are joined.
 */
const CALL_SHIM = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"';
// biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
const CLOSE_INHERITED = 'for fd in /proc/self/fd/*; do fd=${fd##*/}; if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done; ';
const LOOPBACK_UP = 'ip link set lo up 2>/dev/null; exec "$@"';

function chooseKind(mode: SandboxSpec['mode'], host: SandboxHost): { kind: JailKind; warning?: string } | { error: string } {
  if (mode !== 'off' && host.bwrap.ok) return { kind: 'bwrap' };
  const why = host.bwrap.ok ? '' : host.bwrap.reason;
  if (mode === 'bwrap') {
    return { error: `sandbox unavailable: this run asks for sandbox.mode "bwrap", but bwrap cannot run on this worker (${why}). Nothing was run.` };
  }
  const kind: JailKind = host.bwrap.ok || host.namespaces.ok ? 'containment' : 'process-group';
  if (mode === 'off' && kind === 'containment') return { kind };
  const weaker =
    kind === 'containment'
      ? 'tools run with containment only (own PID and network namespaces, no read-only filesystem view)'
      : `tools run as plain process groups that see the network and the worker's processes, environment included: no namespaces either (${host.namespaces.ok ? '' : host.namespaces.reason})`;
  return { kind, warning: mode === 'off' ? `sandbox off: ${weaker}` : `sandbox: bwrap is unavailable on this worker (${why}); ${weaker}` };
}

function bwrapArgs(req: JailRequest, host: SandboxHost, sandboxed: boolean): string[] {
  const ws = req.workspace;
  const under = (a: string, b: string) => b === a || b.startsWith(`${a.replace(/\/$/, '')}/`);
  const hide = (h: HiddenPath) => (h.directory ? ['--tmpfs', h.path] : ['--ro-bind', '/dev/null', h.path]);
  // Hidden ancestors of the workspace go first so the workspace can be bound back over them.
  const hidden = sandboxed ? req.hidden : [];
  const before = hidden.filter((h) => h.directory && under(h.path, ws)).flatMap(hide);
  const after = hidden.filter((h) => !(h.directory && under(h.path, ws))).flatMap(hide);
  const restored = sandboxed ? req.restore.flatMap((file) => ['--ro-bind', file, file]) : [];
  const view = sandboxed
    ? ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--dir', SANDBOX_HOME]
    : ['--bind', '/', '/', '--dev-bind', '/dev', '/dev', '--proc', '/proc'];
  return [
    host.bin.bwrap!,
    ...view,
    ...before,
    '--bind',
    ws,
    ws,
    ...after,
    ...restored,
    '--unshare-pid',
    ...(req.sandbox.network ? [] : ['--unshare-net']),
    ...['--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--die-with-parent', '--new-session'],
    ...(sandboxed ? ['--cap-drop', 'ALL'] : []),
    '--chdir',
    ws,
    '--',
  ];
}

/** rlimits: CPU time always; memory and process count where no cgroup enforces them. */
function rlimitArgs(req: JailRequest, host: SandboxHost, kind: JailKind): string[] {
  if (!host.bin.prlimit) return [];
  const cpuSeconds = Math.ceil((req.timeoutMs / 1000) * req.cgroupLimits.cpus) + 1;
  const args = [host.bin.prlimit, `--cpu=${cpuSeconds}`];
  if (!req.cgroupLimits.memory) args.push(`--data=${req.sandbox.memoryMb * 1024 * 1024}`);
  // RLIMIT_NPROC counts per user namespace, so only a namespaced call can be given its own count.
  if (!req.cgroupLimits.processes && kind !== 'process-group') args.push(`--nproc=${req.sandbox.maxProcesses}`);
  return [...args, '--'];
}

function containmentArgs(req: JailRequest, host: SandboxHost): string[] {
  const die = host.bin.setpriv ? [host.bin.setpriv, '--pdeathsig', 'KILL', '--'] : [];
  const ns = [host.bin.unshare!, ...unshareArgs(host.root, req.sandbox.network), '--'];
  const loopback = !req.sandbox.network && host.bin.ip ? [host.bin.sh, '-c', LOOPBACK_UP, 'tether-loopback'] : [];
  return [...die, ...ns, ...loopback];
}

/** Plans one call's confinement, or says why the run's sandbox cannot be had here. */
export function planJail(req: JailRequest, host: SandboxHost): PlanResult {
  const chosen = chooseKind(req.sandbox.mode, host);
  if ('error' in chosen) return { ok: false, error: chosen.error };
  const { kind } = chosen;
  let wrap: string[];
  if (kind === 'bwrap') wrap = bwrapArgs(req, host, true);
  else if (kind === 'containment' && host.bwrap.ok) wrap = bwrapArgs(req, host, false);
  else if (kind === 'containment') wrap = containmentArgs(req, host);
  else wrap = host.bin.setpriv ? [host.bin.setpriv, '--pdeathsig', 'KILL', '--'] : [];
  const shim = host.bin.bash
    ? [host.bin.bash, '-c', CLOSE_INHERITED + CALL_SHIM, 'tether-call', String(req.cgroupProcs.length), ...req.cgroupProcs]
    : req.cgroupProcs.length
      ? [host.bin.sh, '-c', CALL_SHIM, 'tether-call', String(req.cgroupProcs.length), ...req.cgroupProcs]
      : [];
  const argv = [...shim, ...wrap, ...rlimitArgs(req, host, kind), host.bin.bash ?? host.bin.sh, '-c', req.command];
  const home = kind === 'bwrap' ? SANDBOX_HOME : req.workspace;
  const plan: JailPlan = { kind, argv, home, tmpdir: '/tmp', ...(chosen.warning ? { warning: chosen.warning } : {}) };
  return { ok: true, plan };
}
