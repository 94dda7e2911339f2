import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunStatus } from '../../src/api/types.js';
import { getTranscript, startRun } from '../../src/client/runs.js';
import { waitForResult } from '../../src/client/run-result.js';
import type { Script } from '../../src/scripted/script.js';
import { processesWith, uniqueSleep, waitForProcesses } from '../helpers/processes.js';
import { linesOf, startTestCluster, type TestCluster, until } from './helpers/cluster.js';

// The hanging tool is found by its command line: a pid it printed would be its namespace's.
const HANGING = uniqueSleep();
const shell = (command: string) => ({ reply: { toolCalls: [{ name: 'shell', args: { command } }] } });
const finish = (summary = 'done') => ({ reply: { toolCalls: [{ name: 'finish', args: { summary } }] } });

const scripts: Record<string, Script> = {
  // A tool sees only its own PID namespace; its workspace's path (under its worker's home) names the worker.
  effect: { steps: [shell('echo once >> effect.txt; echo $PWD > owner.txt'), finish()] },
  hang: { steps: [shell(`sleep ${HANGING}`), finish()] },
  steered: { steps: [shell('echo go > started.txt; sleep 4'), finish('steered')] },
  stoppable: { steps: [shell('echo go > started.txt; sleep 3; echo a >> a.txt'), shell('echo b >> b.txt'), finish('went on')] },
  outlives: { steps: [shell('echo $PWD > first.txt; sleep 30'), shell('echo $PWD > second.txt'), finish('moved')] },
};

const base = { critic: { policy: 'off' as const } };
let cluster: TestCluster;
let counter = 0;
const id = (prefix: string) => `${prefix}-${Date.now()}-${counter++}`;

/** The panel's HTTP API, with the cluster's token. */
async function api<T = any>(method: 'GET' | 'POST', route: string, body?: unknown): Promise<{ status: number; json: T }> {
  const response = await fetch(`${cluster.status.panel!.url}api/${route}`, {
    method,
    headers: { authorization: `Bearer ${cluster.panelToken}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as T };
}

async function statusOf(runId: string): Promise<RunStatus> {
  const { status, json } = await api<{ status: RunStatus }>('GET', `runs/${runId}`);
  if (status !== 200) throw new Error(`GET runs/${runId}: ${status}`);
  return json.status;
}

/** Waits until a file in a run's workspace (on whichever worker holds it) has a line, and returns its lines. */
function linesIn(runId: string, name: string, timeoutMs = 60_000): Promise<string[]> {
  return until(
    `${name} in the workspace of ${runId}`,
    async () => {
      const ws = await cluster.workspaceOf(runId);
      const lines = ws ? await linesOf(path.join(ws.dir, name)) : [];
      return lines.length ? lines : undefined;
    },
    timeoutMs,
  );
}

beforeAll(async () => {
  // A SIGKILLed worker here stands for a machine lost for good: nothing starts it again.
  cluster = await startTestCluster(scripts, ['--restart', 'no']);
});
afterAll(async () => {
  await cluster?.down();
});

describe('runs on the cluster', () => {
  it('completes 30 runs spread over the three workers, each with its side effect once', async () => {
    const ids = await Promise.all(
      Array.from({ length: 30 }, () => startRun(cluster.tc, { ...base, goal: 'effect', model: 'scripted:effect' }, { id: id('effect') })),
    );
    const results = await Promise.all(ids.map(({ runId }) => waitForResult(cluster.tc, runId)));
    expect(results.map((r) => r.status)).toEqual(Array(30).fill('completed'));
    const usedWorkers = new Set<number>();
    for (const { runId } of ids) {
      const ws = (await cluster.workspaceOf(runId))!;
      expect(await linesOf(path.join(ws.dir, 'effect.txt')), runId).toEqual(['once']);
      expect((await linesOf(path.join(ws.dir, 'owner.txt')))[0]).toBe(ws.dir);
      usedWorkers.add(ws.worker);
    }
    expect([...usedWorkers].sort()).toEqual([1, 2, 3]);
  });

  it('kills a run through the panel: its tool process dies and the run ends killed with the reason', async () => {
    const { json } = await api<{ runId: string }>('POST', 'runs', { ...base, id: id('kill'), goal: 'hang', model: 'scripted:hang' });
    await waitForProcesses(HANGING, 1, 60_000);
    const killed = await api<RunStatus>('POST', `runs/${json.runId}/kill`, { reason: 'operator says stop' });
    expect(killed.status).toBe(200);
    const result = await waitForResult(cluster.tc, json.runId);
    expect(result).toMatchObject({ status: 'killed', cause: expect.stringContaining('operator says stop') });
    await until('the tool process to die', async () => (processesWith(HANGING).length ? undefined : true), 30_000);
  });

  it('steers a run through the panel: the next model call carries the message', async () => {
    const { json } = await api<{ runId: string }>('POST', 'runs', { ...base, id: id('steer'), goal: 'wait', model: 'scripted:steered' });
    await linesIn(json.runId, 'started.txt');
    const steered = await api<RunStatus>('POST', `runs/${json.runId}/steer`, { message: 'use the blue one' });
    expect(steered.status).toBe(200);
    expect(await waitForResult(cluster.tc, json.runId)).toMatchObject({ status: 'completed', summary: 'steered' });
    const second = cluster.scripted.requestsFor(json.runId).find((r) => r.step === 1)!;
    expect(JSON.stringify(second.body.messages)).toContain('use the blue one');
    const { json: detail } = await api<{ transcript: Array<{ role: string; content: string }> }>('GET', `runs/${json.runId}`);
    expect(detail.transcript.some((m) => m.role === 'user' && m.content.includes('use the blue one'))).toBe(true);
  });

  it('trips and clears the emergency stop of one run through the panel: no step runs while it is stopped', async () => {
    const { json } = await api<{ runId: string }>('POST', 'runs', { ...base, id: id('estop'), goal: 'stop', model: 'scripted:stoppable' });
    await linesIn(json.runId, 'started.txt');
    const tripped = await api<RunStatus>('POST', `runs/${json.runId}/estop`, { reason: 'looks wrong' });
    expect(tripped.status).toBe(200);
    expect(tripped.json.emergencyStop).toMatchObject({ active: true, reason: 'looks wrong' });
    await until('the run to pause', async () => ((await statusOf(json.runId)).state === 'emergency_stopped' ? true : undefined));
    const ws = (await cluster.workspaceOf(json.runId))!;
    expect(await linesOf(path.join(ws.dir, 'b.txt'))).toEqual([]);
    expect((await api('POST', `runs/${json.runId}/clear`, {})).status).toBe(200);
    const result = await waitForResult(cluster.tc, json.runId);
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'completed', summary: 'went on' });
    expect(await linesOf(path.join(ws.dir, 'b.txt'))).toEqual(['b']);
  });

  it('stops the whole fleet through the panel, holds runs started meanwhile, and lets all go on when cleared', async () => {
    const started = await Promise.all(
      [0, 1, 2].map(() => api<{ runId: string }>('POST', 'runs', { ...base, id: id('fleet'), goal: 'fleet', model: 'scripted:stoppable' })),
    );
    const ids = started.map((s) => s.json.runId);
    await Promise.all(ids.map((runId) => linesIn(runId, 'started.txt')));
    // The fleet stop finds runs through visibility, which follows the runs by a moment.
    await until('the runs to be listed', async () => {
      const { json } = await api<{ runs: Array<{ runId: string }> }>('GET', 'runs?state=running');
      return ids.every((runId) => json.runs.some((r) => r.runId === runId)) ? true : undefined;
    });
    const trip = await api<{ affected: string[]; failed: unknown[] }>('POST', 'estop', { action: 'trip', reason: 'fleet drill' });
    expect(trip.status).toBe(200);
    expect(trip.json.affected).toEqual(expect.arrayContaining(ids));
    expect(trip.json.failed).toEqual([]);
    const late = (await api<{ runId: string }>('POST', 'runs', { ...base, id: id('late'), goal: 'late', model: 'scripted:stoppable' })).json.runId;
    for (const runId of [...ids, late]) {
      await until(`${runId} to pause`, async () => ((await statusOf(runId)).state === 'emergency_stopped' ? true : undefined));
    }
    // Started while the fleet was stopped: it asked the model nothing.
    expect(cluster.scripted.requestsFor(late)).toEqual([]);
    const clear = await api<{ affected: string[] }>('POST', 'estop', { action: 'clear' });
    expect(clear.status).toBe(200);
    const results = await Promise.all([...ids, late].map((runId) => waitForResult(cluster.tc, runId)));
    expect(
      results.map((r) => r.status),
      JSON.stringify(results),
    ).toEqual(['completed', 'completed', 'completed', 'completed']);
  });

  it('moves the runs of a SIGKILLed worker to another worker, with the notice, and finishes them', async () => {
    const ids = await Promise.all(
      [0, 1, 2, 3, 4, 5].map(async () => (await startRun(cluster.tc, { ...base, goal: 'outlive', model: 'scripted:outlives' }, { id: id('orphan') })).runId),
    );
    await Promise.all(ids.map((runId) => linesIn(runId, 'first.txt')));
    const byWorker = new Map<number, string[]>();
    for (const runId of ids) {
      const ws = (await cluster.workspaceOf(runId))!;
      byWorker.set(ws.worker, [...(byWorker.get(ws.worker) ?? []), runId]);
    }
    const [victim, orphans] = [...byWorker.entries()].sort((a, b) => b[1].length - a[1].length)[0];
    const victimPid = cluster.status.workers[victim - 1].pid;
    process.kill(victimPid, 'SIGKILL');
    const results = await Promise.all(ids.map((runId) => waitForResult(cluster.tc, runId)));
    expect(results.map((r) => r.status)).toEqual(Array(ids.length).fill('completed'));
    for (const runId of orphans) {
      const transcript = await getTranscript(cluster.tc, runId);
      expect(
        transcript.some((m) => m.role === 'tool' && /worker that held this run's workspace is gone/.test(m.content)),
        runId,
      ).toBe(true);
      const second = cluster.status.workers.map((_, i) => path.join(cluster.dir, 'workers', `worker-${i + 1}`, 'workspaces', runId, 'second.txt'));
      const writers = (await Promise.all(second.map(linesOf))).flat();
      expect(writers).toHaveLength(1);
      expect(writers[0]).not.toContain(`worker-${victim}/`);
    }
  });
});
