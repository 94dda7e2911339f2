import { describe, expect, it } from 'vitest';
import { sandboxChecks } from '../../src/ops/doctor.js';
import type { SandboxHost } from '../../src/tools/host-probe.js';

const bin = { sh: '/bin/sh', bash: '/bin/bash', bwrap: '/usr/bin/bwrap', unshare: '/usr/bin/unshare', prlimit: '/usr/bin/prlimit', setpriv: null, ip: null };
const full: SandboxHost = {
  root: true,
  bin,
  bwrap: { ok: true },
  namespaces: { ok: true },
  cgroup: { version: 1, parents: { pids: '/sys/fs/cgroup/pids', memory: '/sys/fs/cgroup/memory' }, cpus: 1 },
};
const refused = { ok: false as const, reason: 'clone: Operation not permitted' };

describe('tether doctor on the tool sandbox', () => {
  it('says what tools get where everything works', () => {
    const checks = sandboxChecks(full);
    expect(checks.map((c) => [c.name, c.status])).toEqual([
      ['sandbox', 'ok'],
      ['containment', 'ok'],
      ['tool limits', 'ok'],
    ]);
    expect(checks[2].detail).toMatch(/call cgroups \(v1: pids, memory\)/);
  });

  it('in a locked-down container, warns what is missing, what it means and how to fix it', () => {
    const checks = sandboxChecks({ ...full, root: false, bwrap: refused, namespaces: refused, cgroup: null, cgroupProblem: 'EACCES' });
    expect(checks.every((c) => c.status === 'warn' && c.fix)).toBe(true);
    expect(checks[0].detail).toMatch(/bwrap does not work here \(clone: Operation not permitted\).*sandbox.mode "bwrap" gets an error for every tool call/);
    expect(checks[0].fix).toMatch(/apt-get install bubblewrap.*seccomp/);
    expect(checks[1].detail).toMatch(/setsid children can outlive its call/);
    expect(checks[2].detail).toMatch(/RLIMIT_DATA.*RLIMIT_NPROC inside the call's user namespace/);
  });

  it('says that containment holds through unshare when only bwrap is missing', () => {
    const [sandbox, containment] = sandboxChecks({ ...full, bwrap: refused });
    expect(sandbox.status).toBe('warn');
    expect(containment).toMatchObject({ status: 'ok', detail: expect.stringMatching(/through unshare/) });
  });
});
