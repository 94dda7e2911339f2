import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUpInterruptedCall } from '../src/tools/orphans.js';
import { currentBootId, identify, isProcessAlive } from '../src/tools/process-tree.js';
import { uniqueSleep, waitForProcesses } from './helpers/processes.js';

const started: ChildProcess[] = [];
afterEach(() => {
  // The whole group: a leader's children would outlive it otherwise.
  for (const child of started.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** A process leading its own group, as a tool call's root does. */
function spawnLeader(command: string): ChildProcess {
  const child = spawn('/bin/bash', ['-c', command], { detached: true, stdio: 'ignore' });
  started.push(child);
  return child;
}

describe('the clean-up after a crash', () => {
  it("kills the interrupted call's processes when its root is provably the same process", async () => {
    const token = uniqueSleep();
    const root = spawnLeader(`sleep ${token} & sleep ${token} & wait`);
    const [a, b] = await waitForProcesses(token, 2);
    const identity = identify(root.pid!);
    expect(await cleanUpInterruptedCall({ identity }, 200)).toBe('killed');
    for (const pid of [root.pid!, a, b]) expect(isProcessAlive(pid)).toBe(false);
  });

  it('never kills a stranger that now has the recorded pid (a restart reused it)', async () => {
    const token = uniqueSleep();
    const stranger = spawnLeader(`sleep ${token} & wait`);
    const [child] = await waitForProcesses(token);
    const real = identify(stranger.pid!)!;
    // The heartbeat of a call from before the restart: same pid, another process.
    for (const identity of [
      { ...real, startTime: String(Number(real.startTime) - 1) },
      { ...real, bootId: '00000000-0000-0000-0000-000000000000' },
    ]) {
      expect(await cleanUpInterruptedCall({ identity }, 200)).toBe('not-ours');
    }
    expect(isProcessAlive(stranger.pid!)).toBe(true);
    expect(isProcessAlive(child)).toBe(true);
  });

  it('ignores what an older worker recorded (a pgid and a hostname) and a cgroup path that is not a call cgroup', async () => {
    const token = uniqueSleep();
    const stranger = spawnLeader(`sleep ${token}`);
    await waitForProcesses(token);
    const legacy = { host: 'worker-1', pgid: stranger.pid! } as never;
    expect(await cleanUpInterruptedCall(legacy, 200)).toBe('nothing-left');
    const forged = { version: 1 as const, dirs: { pids: '/sys/fs/cgroup/pids' } };
    expect(await cleanUpInterruptedCall({ cgroup: forged }, 200)).toBe('nothing-left');
    expect(isProcessAlive(stranger.pid!)).toBe(true);
  });

  it('reports nothing left when the call died with its worker', async () => {
    const gone = { pid: 2 ** 22 - 3, startTime: '1', bootId: currentBootId() };
    expect(await cleanUpInterruptedCall({ identity: gone }, 200)).toBe('nothing-left');
  });
});
