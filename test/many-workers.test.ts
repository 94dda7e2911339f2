import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectTether, getTranscript, startRun, waitForResult, type TetherClient } from '../src/client/runs.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startChildWorker } from './helpers/child-worker.js';

const shell = (command: string) => ({ reply: { toolCalls: [{ name: 'shell', args: { command } }] } });
const finish = { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } };

const scripts: Record<string, Script> = {
  'who-runs-me': { steps: [shell('echo $PPID >> who.txt'), shell('sleep 0.2; echo $PPID >> who.txt'), shell('echo $PPID >> who.txt; cat who.txt'), finish] } as Script,
  'outlives-its-worker': { steps: [shell('echo $PPID > first.txt; sleep 60'), shell('echo $PPID > second.txt'), finish] } as Script,
};

let scripted: ScriptedServer;
let tc: TetherClient;
const taskQueue = `many-${Date.now()}`;
const workers: Array<Awaited<ReturnType<typeof startChildWorker>>> = [];
const roots: string[] = [];

beforeAll(async () => {
  scripted = await startScriptedServer({ port: 0, scripts });
  for (let i = 0; i < 2; i++) {
    const root = await mkdtemp(path.join(os.tmpdir(), `tether-worker${i}-`));
    roots.push(root);
    workers.push(await startChildWorker({ TEMPORAL_ADDRESS: inject('temporalAddress'), TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url, TETHER_TEST_WORKSPACES: root }));
  }
  tc = await connectTether({ address: inject('temporalAddress'), taskQueue });
}, 120_000);

afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await tc?.close();
  await scripted?.close();
});

const base = { critic: { policy: 'off' as const } };

describe('many workers on one task queue', () => {
  it('runs every run to the end, each run keeping its tools on one worker', async () => {
    const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => startRun(tc, { ...base, goal: 'who', model: 'scripted:who-runs-me' }, { id: `many-${Date.now()}-${i}` }).then((r) => r.runId)));
    const results = await Promise.all(ids.map((id) => waitForResult(tc, id)));
    expect(results.every((r) => r.status === 'completed')).toBe(true);
    const owners = new Set<string>();
    for (const id of ids) {
      const tool = (await getTranscript(tc, id)).filter((m) => m.role === 'tool' && m.toolName === 'shell').pop()!;
      const pids = tool.content.trim().split('\n');
      expect(pids).toHaveLength(3);
      expect(new Set(pids).size).toBe(1);
      owners.add(pids[0]);
    }
    expect([...owners].every((pid) => workers.some((w) => String(w.pid) === pid))).toBe(true);
  }, 120_000);

  it('moves a run to a live worker with a fresh workspace when the worker holding it dies', async () => {
    const runId = (await startRun(tc, { ...base, goal: 'survive', model: 'scripted:outlives-its-worker' }, { id: `orphan-${Date.now()}` })).runId;
    let holder = '';
    for (let i = 0; i < 200 && !holder; i++) {
      for (const root of roots) holder ||= (await readFile(path.join(root, runId, 'first.txt'), 'utf8').catch(() => '')).trim();
      if (!holder) await sleep(100);
    }
    const dying = workers.find((w) => String(w.pid) === holder)!;
    dying.kill('SIGKILL');
    const result = await waitForResult(tc, runId);
    expect(result).toMatchObject({ status: 'completed' });
    const survivor = workers.find((w) => w !== dying)!;
    const survivorRoot = roots[workers.indexOf(survivor)];
    expect((await readFile(path.join(survivorRoot, runId, 'second.txt'), 'utf8')).trim()).toBe(String(survivor.pid));
    const transcript = await getTranscript(tc, runId);
    expect(transcript.some((m) => m.role === 'tool' && /worker that held this run's workspace is gone/.test(m.content))).toBe(true);
    workers.splice(workers.indexOf(dying), 1);
  }, 120_000);
});
