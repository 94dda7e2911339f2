import { describe, expect, it } from 'vitest';
import { parseRunSpec, sandboxSchema } from '../../src/api/spec.js';
import type { SandboxHost } from '../../src/tools/host-probe.js';
import { type JailRequest, planJail, SANDBOX_HOME } from '../../src/tools/jail-plan.js';

const bin = {
  sh: '/bin/sh',
  bash: '/bin/bash',
  bwrap: '/usr/bin/bwrap',
  unshare: '/usr/bin/unshare',
  prlimit: '/usr/bin/prlimit',
  setpriv: '/usr/bin/setpriv',
  ip: '/usr/sbin/ip',
};
const host = (over: Partial<SandboxHost> = {}): SandboxHost => ({
  root: true,
  bin,
  bwrap: { ok: true },
  namespaces: { ok: true },
  cgroup: null,
  ...over,
});
const noBwrap = { bwrap: { ok: false as const, reason: 'bwrap: setting up uid map: Permission denied' } };
const request = (over: Partial<JailRequest> = {}): JailRequest => ({
  command: 'make test',
  workspace: '/srv/ws/run-1',
  sandbox: sandboxSchema.parse({}),
  timeoutMs: 30_000,
  hidden: [],
  restore: [],
  cgroupProcs: [],
  cgroupLimits: { memory: false, processes: false, cpus: 2 },
  ...over,
});

function plan(req: JailRequest, h: SandboxHost) {
  const result = planJail(req, h);
  if (!result.ok) throw new Error(result.error);
  return result.plan;
}

/** The value after a flag in an argv. */
const after = (argv: string[], flag: string) => argv[argv.indexOf(flag) + 1];

describe('the sandbox settings of a RunSpec', () => {
  it('default to bwrap where it works, no network, and bounded limits', () => {
    const spec = parseRunSpec({ goal: 'x', model: 'scripted:s' });
    expect(spec.sandbox).toEqual({ network: false, memoryMb: 2048, maxProcesses: 512 });
    expect(spec.sandbox.mode).toBeUndefined();
  });

  it('refuse unknown modes, unknown fields and limits out of bounds with the field named', () => {
    expect(() => parseRunSpec({ goal: 'x', model: 'scripted:s', sandbox: { mode: 'docker' } })).toThrow(/sandbox\.mode/);
    expect(() => parseRunSpec({ goal: 'x', model: 'scripted:s', sandbox: { memoryMb: 1 } })).toThrow(/sandbox\.memoryMb/);
    expect(() => parseRunSpec({ goal: 'x', model: 'scripted:s', sandbox: { maxProcesses: 0 } })).toThrow(/sandbox\.maxProcesses/);
    expect(() => parseRunSpec({ goal: 'x', model: 'scripted:s', sandbox: { seccomp: true } })).toThrow(/seccomp/);
  });
});

describe('planning a confined call', () => {
  it('runs the command under bwrap with a read-only root, the workspace writable, a private /tmp and no network', () => {
    const { kind, argv, home, warning } = plan(request(), host());
    expect(kind).toBe('bwrap');
    expect(warning).toBeUndefined();
    // First the shim that closes inherited descriptors (no cgroups here), then the sandbox.
    expect(argv.slice(0, 6)).toEqual([bin.bash, '-c', expect.stringContaining('exec $fd>&-'), 'tether-call', '0', bin.bwrap]);
    expect(argv.join(' ')).toContain('--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp');
    expect(argv.join(' ')).toContain('--bind /srv/ws/run-1 /srv/ws/run-1');
    for (const flag of ['--unshare-pid', '--unshare-net', '--die-with-parent', '--new-session']) expect(argv).toContain(flag);
    expect(after(argv, '--cap-drop')).toBe('ALL');
    expect(argv.slice(-3)).toEqual(['/bin/bash', '-c', 'make test']);
    expect(home).toBe(SANDBOX_HOME);
  });

  it('shares the network only when the run asks for it', () => {
    expect(plan(request({ sandbox: sandboxSchema.parse({ network: true }) }), host()).argv).not.toContain('--unshare-net');
    expect(plan(request({ sandbox: sandboxSchema.parse({ network: true, mode: 'off' }) }), host(noBwrap)).argv).not.toContain('--net');
  });

  it('hides secret paths, binding the workspace back over a hidden ancestor', () => {
    const hidden = [
      { path: '/srv/ws', directory: true },
      { path: '/etc/tether/tls.key', directory: false },
    ];
    const argv = plan(request({ hidden }), host()).argv.join(' ');
    const tmpfs = argv.indexOf('--tmpfs /srv/ws ');
    const bind = argv.indexOf('--bind /srv/ws/run-1 /srv/ws/run-1');
    const key = argv.indexOf('--ro-bind /dev/null /etc/tether/tls.key');
    expect(tmpfs).toBeGreaterThan(0);
    expect(bind).toBeGreaterThan(tmpfs);
    expect(key).toBeGreaterThan(bind);
  });

  it('binds resolver files back over a hidden runtime directory, read-only', () => {
    const hidden = [{ path: '/run', directory: true }];
    const argv = plan(request({ hidden, restore: ['/run/systemd/resolve/stub-resolv.conf'] }), host()).argv.join(' ');
    expect(argv.indexOf('--ro-bind /run/systemd/resolve/stub-resolv.conf /run/systemd/resolve/stub-resolv.conf')).toBeGreaterThan(argv.indexOf('--tmpfs /run'));
  });

  it('refuses to run when the run asks for bwrap explicitly and the worker cannot give it', () => {
    const result = planJail(request({ sandbox: sandboxSchema.parse({ mode: 'bwrap' }) }), host(noBwrap));
    expect(result).toEqual({ ok: false, error: expect.stringMatching(/sandbox unavailable.*mode "bwrap".*Permission denied.*Nothing was run/) });
  });

  it('falls back to containment by default, with a warning naming the reason', () => {
    const { kind, argv, warning } = plan(request(), host(noBwrap));
    expect(kind).toBe('containment');
    expect(warning).toMatch(/bwrap is unavailable on this worker \(bwrap: setting up uid map: Permission denied\); tools run with containment only/);
    expect(argv.slice(5, 9)).toEqual([bin.setpriv, '--pdeathsig', 'KILL', '--']);
    expect(argv).toContain(bin.unshare);
    for (const flag of ['--pid', '--fork', '--kill-child', '--mount-proc', '--net']) expect(argv).toContain(flag);
    expect(argv).toContain('ip link set lo up 2>/dev/null; exec "$@"');
  });

  it('keeps containment in mode off: own PID and network namespaces, the filesystem as the worker sees it, no warning', () => {
    const viaBwrap = plan(request({ sandbox: sandboxSchema.parse({ mode: 'off' }) }), host());
    expect(viaBwrap.kind).toBe('containment');
    expect(viaBwrap.warning).toBeUndefined();
    expect(viaBwrap.argv.join(' ')).toContain('--bind / / --dev-bind /dev /dev --proc /proc');
    expect(viaBwrap.argv).toContain('--unshare-pid');
    expect(viaBwrap.argv).toContain('--unshare-net');
    expect(viaBwrap.argv).not.toContain('--cap-drop');
    expect(viaBwrap.home).toBe('/srv/ws/run-1');
  });

  it('maps an unprivileged worker to root of its own user namespace for unshare', () => {
    expect(plan(request(), host({ ...noBwrap, root: false })).argv).toContain('--map-root-user');
    expect(plan(request(), host({ ...noBwrap, root: true })).argv).not.toContain('--map-root-user');
  });

  it('says plainly when not even namespaces work', () => {
    const { kind, warning, argv } = plan(request(), host({ ...noBwrap, namespaces: { ok: false, reason: 'unshare failed: Operation not permitted' } }));
    expect(kind).toBe('process-group');
    expect(warning).toMatch(
      /plain process groups that see the network and the worker's processes, environment included: no namespaces either \(unshare failed: Operation not permitted\)/,
    );
    expect(argv.slice(0, 6)).toEqual([bin.bash, '-c', expect.any(String), 'tether-call', '0', bin.setpriv]);
  });

  it('joins the call cgroup first, from a shim that execs the rest, so no fork escapes the limits', () => {
    const procs = ['/sys/fs/cgroup/pids/tether-c1/cgroup.procs', '/sys/fs/cgroup/memory/tether-c1/cgroup.procs'];
    const argv = plan(request({ cgroupProcs: procs, cgroupLimits: { memory: true, processes: true, cpus: 1 } }), host()).argv;
    expect(argv.slice(0, 4)).toEqual([bin.bash, '-c', expect.stringContaining('exec "$@"'), 'tether-call']);
    expect(argv.slice(4, 7)).toEqual(['2', ...procs]);
    expect(argv[7]).toBe(bin.bwrap);
    // Without bash, sh joins the cgroups; it cannot close descriptors above 9.
    const bare = plan(request({ cgroupProcs: procs }), host({ bin: { ...bin, bash: null } })).argv;
    expect(bare.slice(0, 4)).toEqual([bin.sh, '-c', expect.stringContaining('exec "$@"'), 'tether-call']);
  });

  it('limits CPU time always, and memory and processes by rlimit where no cgroup does', () => {
    const limited = plan(request({ timeoutMs: 30_000 }), host()).argv;
    expect(limited).toContain('--cpu=61');
    expect(limited).toContain(`--data=${2048 * 1024 * 1024}`);
    expect(limited).toContain('--nproc=512');
    const byCgroup = plan(request({ cgroupLimits: { memory: true, processes: true, cpus: 1 } }), host()).argv;
    expect(byCgroup.some((a) => a.startsWith('--data') || a.startsWith('--nproc'))).toBe(false);
    // Without a namespace, RLIMIT_NPROC would count the worker's own threads too.
    const plain = plan(request(), host({ ...noBwrap, namespaces: { ok: false, reason: 'x' } })).argv;
    expect(plain.some((a) => a.startsWith('--nproc'))).toBe(false);
  });
});
