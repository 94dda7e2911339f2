import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCallCgroup, leftByDeadWorker, limitEvents, procsFiles } from '../../src/tools/cgroup.js';
import { parseCgroupMounts, parseOwnCgroups } from '../../src/tools/cgroup-host.js';

const MOUNTINFO = [
  '25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw',
  '31 25 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate',
  '34 25 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory',
  '35 25 0:30 /docker/abc /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,pids',
  '36 25 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,cpu,cpuacct',
].join('\n');

describe('finding the worker in its cgroups', () => {
  it('reads the cgroup mounts of both versions with their controllers and roots', () => {
    expect(parseCgroupMounts(MOUNTINFO)).toEqual([
      { version: 2, root: '/', mountPoint: '/sys/fs/cgroup/unified', controllers: [] },
      { version: 1, root: '/', mountPoint: '/sys/fs/cgroup/memory', controllers: ['rw', 'memory'] },
      { version: 1, root: '/docker/abc', mountPoint: '/sys/fs/cgroup/pids', controllers: ['rw', 'pids'] },
      { version: 1, root: '/', mountPoint: '/sys/fs/cgroup/cpu,cpuacct', controllers: ['rw', 'cpu', 'cpuacct'] },
    ]);
  });

  it("reads the worker's own cgroup per controller and the unified one", () => {
    const own = parseOwnCgroups('12:pids:/docker/abc\n4:memory:/jobs/7\n2:cpu,cpuacct:/\n1:name=systemd:/init.scope\n0::/jobs/7\n');
    expect(own.get('pids')).toBe('/docker/abc');
    expect(own.get('memory')).toBe('/jobs/7');
    expect(own.get('cpuacct')).toBe('/');
    expect(own.get('systemd')).toBe('/init.scope');
    expect(own.get('')).toBe('/jobs/7');
  });
});

describe('a call cgroup', () => {
  it('writes the limits of version 1, one directory per controller', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'cg1-'));
    const parents = { pids: path.join(root, 'pids'), memory: path.join(root, 'memory'), cpu: path.join(root, 'cpu') };
    const group = await createCallCgroup({ version: 1, parents, cpus: 1.5 }, 'call_1-ab', { maxProcesses: 64, memoryBytes: 128 * 2 ** 20 });
    expect(group.dirs.pids).toBe(path.join(root, 'pids', `tether-${process.pid}-call_1-ab`));
    expect(await readFile(path.join(group.dirs.pids!, 'pids.max'), 'utf8')).toBe('64');
    expect(await readFile(path.join(group.dirs.memory!, 'memory.limit_in_bytes'), 'utf8')).toBe(String(128 * 2 ** 20));
    expect(await readFile(path.join(group.dirs.cpu!, 'cpu.cfs_quota_us'), 'utf8')).toBe('150000');
    expect(procsFiles(group)).toHaveLength(3);
  });

  it('writes the limits of version 2 in one directory and reads what the kernel did there', async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), 'cg2-'));
    const parents = { pids: parent, memory: parent, cpu: parent };
    const group = await createCallCgroup({ version: 2, parents, cpus: 1 }, 'c2', { maxProcesses: 32, memoryBytes: 2 ** 26 });
    const dir = path.join(parent, `tether-${process.pid}-c2`);
    expect(await readFile(path.join(dir, 'pids.max'), 'utf8')).toBe('32');
    expect(await readFile(path.join(dir, 'memory.max'), 'utf8')).toBe(String(2 ** 26));
    expect(await readFile(path.join(dir, 'memory.swap.max'), 'utf8')).toBe('0');
    expect(await readFile(path.join(dir, 'cpu.max'), 'utf8')).toBe('100000 100000');
    expect(procsFiles(group)).toEqual([path.join(dir, 'cgroup.procs')]);
    await writeFile(path.join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n');
    await writeFile(path.join(dir, 'pids.events'), 'max 17\n');
    expect(await limitEvents(group)).toEqual({ oomKills: 1, forkRefusals: 17 });
  });

  it('reports no events where the files say none', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'cg1e-'));
    await mkdir(path.join(root, 'memory'));
    const group = { version: 1 as const, dirs: { memory: path.join(root, 'memory') } };
    await writeFile(path.join(root, 'memory', 'memory.oom_control'), 'oom_kill_disable 0\nunder_oom 0\noom_kill 0\n');
    expect(await limitEvents(group)).toEqual({ oomKills: 0, forkRefusals: 0 });
  });
});

describe('sweeping call cgroups at start', () => {
  it("removes only those a dead worker left: a live worker's, made but not yet entered, stays, and so do others", () => {
    const alive = (pid: number) => pid === 4242;
    expect(leftByDeadWorker('tether-1717-call_r_3_0-1fe8685e', alive)).toBe(true);
    expect(leftByDeadWorker('tether-4242-call_r_3_0-1fe8685e', alive)).toBe(false);
    expect(leftByDeadWorker('tether-call_r_3_0-1fe8685e', alive)).toBe(false);
    expect(leftByDeadWorker('tether-probe-1717', alive)).toBe(false);
    expect(leftByDeadWorker('system.slice', alive)).toBe(false);
  });
});
