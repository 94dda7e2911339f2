import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectTether, getTranscript, startRun, type TetherClient } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { readRunStatus } from '../src/client/run-status.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startChildWorker } from './helpers/child-worker.js';
import { eventually } from './helpers/eventually.js';

const shell = (command: string) => ({ reply: { toolCalls: [{ name: 'shell', args: { command } }] } });
const finish = { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } };

const scripts: Record<string, Script> = {
  // A tool sees only its own PID namespace; the workspace's path (under each worker's own root) names its worker.
  'who-runs-me': {
    steps: [shell('echo $PWD >> who.txt'), shell('sleep 0.2; echo $PWD >> who.txt'), shell('echo $PWD >> who.txt; cat who.txt'), finish],
  } as Script,
  'outlives-its-worker': { steps: [shell('echo $PWD > first.txt; sleep 60'), shell('echo $PWD > second.txt'), finish] } as Script,
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
    workers.push(
      await startChildWorker({
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TETHER_TASK_QUEUE: taskQueue,
        TETHER_SCRIPTED_URL: scripted.url,
        TETHER_TEST_WORKSPACES: root,
      }),
    );
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
    const ids = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        startRun(tc, { ...base, goal: 'who', model: 'scripted:who-runs-me' }, { id: `many-${Date.now()}-${i}` }).then((r) => r.runId),
      ),
    );
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
    expect([...owners].every((dir) => roots.some((root) => dir.startsWith(`${root}/`)))).toBe(true);
  }, 120_000);

  it('moves a run to a live worker with a fresh workspace when the worker holding it dies', async () => {
    const runId = (await startRun(tc, { ...base, goal: 'survive', model: 'scripted:outlives-its-worker' }, { id: `orphan-${Date.now()}` })).runId;
    const holder = await eventually("a worker to start the run's first tool", async () => {
      const written = await Promise.all(roots.map((root) => readFile(path.join(root, runId, 'first.txt'), 'utf8').catch(() => '')));
      return written.map((text) => text.trim()).find(Boolean) ?? '';
    });
    const dying = workers[roots.findIndex((root) => holder.startsWith(`${root}/`))];
    dying.kill('SIGKILL');
    // The server still holds the run's queries for the dead worker for a while; the live one answers once it gives up.
    expect((await readRunStatus(tc, runId)).status).toMatchObject({ runId, state: 'running' });
    const result = await waitForResult(tc, runId);
    expect(result).toMatchObject({ status: 'completed' });
    const survivor = workers.find((w) => w !== dying)!;
    const survivorRoot = roots[workers.indexOf(survivor)];
    expect((await readFile(path.join(survivorRoot, runId, 'second.txt'), 'utf8')).trim()).toBe(path.join(survivorRoot, runId));
    const transcript = await getTranscript(tc, runId);
    const notice = transcript.find((m) => m.role === 'tool' && /worker that held this run's workspace is gone/.test(m.content));
    // The call had started: the model is told it ran, for how long, and that it was not run again.
    expect(notice?.content).toMatch(/the call in flight stopped with it after (running for \d+s|it had started), and was not run again/);
    roots.splice(workers.indexOf(dying), 1);
    workers.splice(workers.indexOf(dying), 1);
  }, 120_000);
});
