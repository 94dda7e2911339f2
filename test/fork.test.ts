import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { type CliRun, runCli } from './helpers/cli-process.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkRun } from '../src/client/fork.js';
import { connectTether, getTranscript, startRun } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { startPanel } from '../src/panel/server.js';
import type { Script } from '../src/scripted/script.js';
import { startChildWorker } from './helpers/child-worker.js';
import { eventually } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';

const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
const finish = call('finish', { summary: 'done' });

const scripts: Record<string, Script> = {
  // Step 1 writes a.txt, step 2 changes it and adds b.txt, step 3 adds c.txt, step 4 finishes.
  writer: {
    steps: [
      call('write_file', { path: 'a.txt', content: 'one\n' }),
      call('shell', { command: 'echo changed >> a.txt && echo two > b.txt' }),
      call('write_file', { path: 'c.txt', content: 'three\n' }),
      finish,
    ],
  } as Script,
  // A fork's model: from its first step on, it records what it found, then finishes.
  inspector: {
    steps: [],
    after: {
      toolCalls: [
        { name: 'shell', args: { command: 'ls > seen.txt && cat a.txt >> seen.txt' } },
        { name: 'finish', args: { summary: 'seen' } },
      ],
    },
  } as Script,
  // Step 2's command is cut short by a SIGKILL of its worker, after it wrote b.txt.
  'crash-writer': {
    steps: [
      call('write_file', { path: 'a.txt', content: 'before the crash' }),
      call('shell', { command: 'echo started > b.txt; sleep 6; echo never > b.txt' }),
      call('write_file', { path: 'c.txt', content: 'after the crash' }),
      finish,
    ],
  } as Script,
  // Step 1 delegates to a sub-agent that writes child.txt in the same workspace; step 2 writes parent.txt.
  delegator: {
    steps: [
      call('delegate', { goal: 'write a file', model: 'scripted:child-writer', tools: ['write_file', 'finish'] }),
      call('write_file', { path: 'parent.txt', content: 'after the sub-agent' }),
      finish,
    ],
  } as Script,
  'child-writer': { steps: [call('write_file', { path: 'child.txt', content: 'from the sub-agent' }), call('finish', { summary: 'wrote it' })] } as Script,
  finisher: { steps: [], after: { toolCalls: [{ name: 'finish', args: { summary: 'stopped at once' } }] } } as Script,
  'many-steps': { steps: [{ ...call('write_file', { path: 'n.txt', content: 'written at {{step}}' }), repeat: 40 }, finish] } as Script,
};

let h: Harness;
let env: NodeJS.ProcessEnv;
let checkpointRoot: string;
beforeAll(async () => {
  checkpointRoot = await mkdtemp(path.join(os.tmpdir(), 'tether-checkpoints-'));
  h = await startHarness({ scripts, worker: { deps: { checkpointRoot } } });
  env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
});
afterAll(async () => h?.stop());

function tether(args: string[]): Promise<CliRun> {
  return runCli(args, env);
}

/** Forks through the CLI and returns the new id, which is all it prints. */
async function fork(runId: string, ...args: string[]): Promise<string> {
  const out = await tether(['fork', runId, ...args]);
  expect(out.stderr.replace(/^tether: .*tsx.*\n/m, ''), out.stderr).toBe('');
  expect(out.code).toBe(0);
  return out.stdout.trim();
}

const base = { critic: { policy: 'off' as const } };
const workspace = (runId: string) => path.join(h.workspaceRoot, runId);
const read = (runId: string, file: string) => readFile(path.join(workspace(runId), file), 'utf8');
const files = async (runId: string) => (await readdir(workspace(runId))).filter((f) => !f.startsWith('.')).sort();

let original: string;
beforeAll(async () => {
  original = await h.start({ ...base, goal: 'write three files', model: 'scripted:writer' }, `fork-orig-${Date.now()}`);
  expect((await h.result(original)).status).toBe('completed');
});

describe('checkpoints', () => {
  it('are kept in a repository of their own outside the workspace, one per run', async () => {
    expect(existsSync(path.join(checkpointRoot, `${original}.git`, 'HEAD'))).toBe(true);
    expect(existsSync(path.join(workspace(original), '.git'))).toBe(false);
  });
});

describe('tether fork', () => {
  it("starts a run with the original's transcript up to step N and its files as they were after N, and the steer reaches the model", async () => {
    const forkId = await fork(original, '--at-step', '2', '--model', 'scripted:finisher', '--steer', 'look before you leap');
    expect(forkId).not.toBe(original);
    const result = await h.result(forkId);
    expect(result).toMatchObject({ status: 'completed', summary: 'stopped at once' });

    expect(await files(forkId)).toEqual(['a.txt', 'b.txt']);
    expect(await read(forkId, 'a.txt')).toBe('one\nchanged\n');
    expect(await read(forkId, 'b.txt')).toBe('two\n');

    const transcript = await getTranscript(h.tc, forkId);
    const originalTranscript = await getTranscript(h.tc, original);
    expect(transcript.slice(0, 5)).toEqual(originalTranscript.slice(0, 5));
    expect(transcript[5]).toEqual({ role: 'user', content: 'look before you leap', source: 'steer' });

    const [first] = h.scripted.requestsFor(forkId);
    const messages = first!.body.messages as Array<{ role: string; content: string }>;
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: 'look before you leap' });
    expect(messages.filter((m) => m.role === 'assistant')).toHaveLength(2);

    const status = await h.status(forkId);
    expect(status.forkOf).toEqual({ runId: original, step: 2 });
    expect(status.model).toBe('scripted:finisher');
  });

  it('forks at a delegate step with the files its sub-agent left, and before it with none', async () => {
    const parent = await h.start(
      { ...base, goal: 'delegate', model: 'scripted:delegator', tools: ['write_file', 'delegate', 'finish'] },
      `fork-deleg-${Date.now()}`,
    );
    expect(await h.result(parent)).toMatchObject({ status: 'completed', steps: 3 });
    expect(await files(parent)).toEqual(['child.txt', 'parent.txt']);
    // Both checkpoints around the delegate call were taken: a failed one is a warning.
    expect((await h.status(parent)).warnings ?? []).toEqual([]);
    const atDelegate = await fork(parent, '--at-step', '1', '--model', 'scripted:finisher');
    expect(await h.result(atDelegate)).toMatchObject({ status: 'completed' });
    expect(await files(atDelegate)).toEqual(['child.txt']);
    expect(await read(atDelegate, 'child.txt')).toBe('from the sub-agent');
    const beforeIt = await fork(parent, '--at-step', '0', '--model', 'scripted:finisher');
    expect(await h.result(beforeIt)).toMatchObject({ status: 'completed' });
    expect(await files(beforeIt)).toEqual([]);
  });

  it('prints the new id as JSON with --output json, takes --id, and lists forks by TetherForkOf', async () => {
    const wanted = `fork-named-${Date.now()}`;
    const out = await tether(['fork', original, '--at-step', '1', '--model', 'scripted:finisher', '--id', wanted, '--output', 'json']);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout.trim().split('\n').pop()!)).toEqual({ runId: wanted, forkOf: { runId: original, step: 1 } });
    await h.result(wanted);
    expect(await files(wanted)).toEqual(['a.txt']);
    await eventually(
      'the fork to be listed by TetherForkOf',
      async () => {
        const ids: string[] = [];
        for await (const w of h.tc.client.workflow.list({ query: `TetherForkOf = '${original}'` })) ids.push(w.workflowId);
        return ids;
      },
      (ids) => ids.includes(wanted),
      { timeoutMs: 30_000 },
    );
  });

  it('forks a run that never touched its files, from step 0, with another model, and records who forked it', async () => {
    const quiet = await h.start({ ...base, goal: 'finish at once', model: 'scripted:finisher' });
    await h.result(quiet);
    const forkId = await fork(quiet, '--at-step', '0', '--model', 'scripted:inspector', '--as', 'ann');
    expect((await h.result(forkId)).status).toBe('completed');
    const status = await h.status(forkId);
    expect(status).toMatchObject({ forkOf: { runId: quiet, step: 0 }, model: 'scripted:inspector' });
    expect(status.audit?.[0]).toMatchObject({ action: 'fork', by: 'ann', via: 'cli', detail: `from ${quiet} at step 0` });
  });

  it('forks a fork, at a step of its own and at one it inherited', async () => {
    const first = await fork(original, '--at-step', '2', '--model', 'scripted:inspector');
    expect((await h.result(first)).status).toBe('completed');
    expect(await read(first, 'seen.txt')).toBe('a.txt\nb.txt\nseen.txt\none\nchanged\n');

    const own = await fork(first, '--at-step', '3', '--model', 'scripted:finisher');
    await h.result(own);
    expect(await files(own)).toEqual(['a.txt', 'b.txt', 'seen.txt']);
    expect(await h.status(own)).toMatchObject({ forkOf: { runId: first, step: 3 } });

    const inherited = await fork(first, '--at-step', '1', '--model', 'scripted:finisher');
    await h.result(inherited);
    expect(await files(inherited)).toEqual(['a.txt']);
    expect(await read(inherited, 'a.txt')).toBe('one\n');
  });

  it('forks a run that continued as new, from a step of an earlier execution', async () => {
    const long = await h.start({ ...base, goal: 'many steps', model: 'scripted:many-steps', limits: { maxHistoryEvents: 200, maxSteps: 60 } });
    expect((await h.result(long)).status).toBe('completed');
    expect((await h.status(long)).continuedAsNew).toBeGreaterThan(0);

    const forkId = await fork(long, '--at-step', '3', '--model', 'scripted:finisher');
    await h.result(forkId);
    const transcript = await getTranscript(h.tc, forkId);
    // The third reply is step 3's; the fourth is the fork's own.
    const written = transcript.filter((m) => m.role === 'assistant')[2]!;
    expect(written.role === 'assistant' && written.toolCalls?.[0]?.args).toEqual({ path: 'n.txt', content: await read(forkId, 'n.txt') });
    expect(await read(forkId, 'n.txt')).not.toBe(await read(long, 'n.txt'));
  });
});

describe('tether fork refuses bad input with a clear error', () => {
  it('a step beyond the run, an unknown id, a step that is not a number', async () => {
    const beyond = await tether(['fork', original, '--at-step', '9']);
    expect(beyond.code).toBe(2);
    expect(beyond.stderr).toContain(`step 9 is beyond the run's length: run ${original} has taken 4 steps`);

    const unknown = await tether(['fork', 'no-such-run', '--at-step', '1']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no run with id "no-such-run"');

    const word = await tether(['fork', original, '--at-step', 'two']);
    expect(word.code).toBe(2);
    expect(word.stderr).toContain('invalid --at-step "two"');
  });

  it('an ended run no worker can replay: said at once, with what to do', async () => {
    const queue = `nobody-polls-${Date.now()}`;
    const { runId } = await startRun({ ...h.tc, taskQueue: queue }, { goal: 'never picked up', model: 'scripted:finisher' });
    await h.tc.client.workflow.getHandle(runId).terminate('gave up on it');
    const orphan = await tether(['fork', runId, '--at-step', '1']);
    expect(orphan.code).toBe(1);
    expect(orphan.stderr).toContain(
      `fork: run ${runId} has ended, and only a worker on its task queue "${queue}" can replay it to answer (none has polled it lately): ` +
        `start one on that queue (\`TETHER_TASK_QUEUE=${queue} tether worker\`) and ask again, or read the run with \`tether history ${runId}\``,
    );
  });
});

describe('the panel', () => {
  const TOKEN = 'fork-test-token-0123456789';

  it('forks from a step with "Fork from here", opens the fork, and answers bad input on its API with 400 and 404', async () => {
    const panel = await startPanel({ client: h.tc, port: 0, token: TOKEN, temporalUiUrl: 'http://localhost:8233' });
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    try {
      const post = (runId: string, body: unknown) =>
        fetch(`${panel.url}api/runs/${runId}/fork`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const beyond = await post(original, { step: 9 });
      expect(beyond.status).toBe(400);
      expect((await beyond.json()).error).toContain("beyond the run's length");
      expect((await post('no-such-run', { step: 1 })).status).toBe(404);
      expect((await post(original, { step: 'one' })).status).toBe(400);

      const page = await browser.newPage();
      const errors: string[] = [];
      // Every API call the page makes succeeds (the browser's own favicon request is not one).
      page.on('response', (r) => r.url().includes('/api/') && r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
      await page.goto(`${panel.url}#token=${TOKEN}`);
      await page.goto(`${panel.url}#/runs/${encodeURIComponent(original)}`);
      await page.waitForSelector('#status[data-state="completed"]');
      await page.waitForFunction(() => document.querySelectorAll('#transcript .msg-assistant button.fork').length === 4);
      await page.locator('#transcript .msg-assistant').nth(1).locator('button.fork').click();
      await page.fill('.fork-form .fork-steer', 'from the panel');
      await page.fill('.fork-form .fork-model', 'scripted:finisher');
      await page.click('.fork-form .fork-start');
      await page
        .waitForFunction((orig) => location.hash.startsWith('#/runs/') && !location.hash.endsWith(encodeURIComponent(orig)), original)
        .catch(async (err: Error) => {
          throw new Error(`${err.message}; the page says "${await page.textContent('#flash')}"; failed API calls: ${errors.join(', ') || 'none'}`);
        });
      const forkId = decodeURIComponent((await page.evaluate(() => location.hash)).slice('#/runs/'.length));
      await page.waitForSelector('#fork-of');
      expect(await page.textContent('#fork-of')).toBe(`${original} at step 2`);

      await h.result(forkId);
      expect(await files(forkId)).toEqual(['a.txt', 'b.txt']);
      const steers = (await getTranscript(h.tc, forkId)).filter((m) => m.role === 'user' && m.source === 'steer');
      expect(steers.map((m) => m.content)).toEqual(['from the panel']);

      // The goal forks from step 0: no reply kept, the files as they were before the first call.
      await page.goto(`${panel.url}#/runs/${encodeURIComponent(original)}`);
      await page.waitForSelector('#status[data-state="completed"]');
      await page.locator('#transcript .msg-user button.fork').first().click();
      await page.fill('.fork-form .fork-model', 'scripted:finisher');
      await page.click('.fork-form .fork-start');
      await page.waitForFunction(
        (seen) => location.hash.startsWith('#/runs/') && !seen.some((id) => location.hash.endsWith(encodeURIComponent(id))),
        [original, forkId],
      );
      const fromStart = decodeURIComponent((await page.evaluate(() => location.hash)).slice('#/runs/'.length));
      await page.waitForSelector('#fork-of');
      expect(await page.textContent('#fork-of')).toBe(`${original} at step 0`);
      expect(await h.result(fromStart)).toMatchObject({ status: 'completed' });
      expect((await getTranscript(h.tc, fromStart)).filter((m) => m.role === 'assistant')).toHaveLength(1);
      expect(await files(fromStart)).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
      await panel.close();
    }
  });
});

describe('checkpoints and crashes', () => {
  it('forks a run whose worker is gone on a worker restarted with the same TETHER_HOME, which has its checkpoints', async () => {
    const taskQueue = `fork-restart-${Date.now()}`;
    // Bound workspaces (the default): each worker polls a queue of its own, and a restarted one gets a new queue.
    const env = {
      TEMPORAL_ADDRESS: h.address,
      TETHER_TASK_QUEUE: taskQueue,
      TETHER_SCRIPTED_URL: h.scripted.url,
      TETHER_TEST_WORKSPACES: await mkdtemp(path.join(os.tmpdir(), 'tether-fork-restart-')),
      TETHER_HOME: await mkdtemp(path.join(os.tmpdir(), 'tether-fork-restart-home-')),
    };
    const first = await startChildWorker(env);
    const tc = await connectTether({ address: h.address, taskQueue });
    let second: Awaited<ReturnType<typeof startChildWorker>> | undefined;
    try {
      const { runId } = await startRun(tc, { ...base, goal: 'write', model: 'scripted:writer' }, { id: `fork-restart-${Date.now()}` });
      expect((await waitForResult(tc, runId)).status).toBe('completed');
      first.kill('SIGTERM');
      await new Promise((resolve) => first.once('exit', resolve));
      second = await startChildWorker(env);
      const forked = await forkRun(tc, runId, { step: 1, model: 'scripted:finisher' });
      expect(await waitForResult(tc, forked.runId)).toMatchObject({ status: 'completed' });
      // Its files as they were after step 1.
      expect(await readFile(path.join(env.TETHER_TEST_WORKSPACES, forked.runId, 'a.txt'), 'utf8')).toBe('one\n');
      expect(existsSync(path.join(env.TETHER_TEST_WORKSPACES, forked.runId, 'b.txt'))).toBe(false);
    } finally {
      first.kill('SIGKILL');
      second?.kill('SIGTERM');
      await tc.close();
    }
  }, 90_000);

  it('keeps the checkpoints of a run whose worker was SIGKILLed mid-call: forks restore the files each step left', async () => {
    const taskQueue = `fork-crash-${Date.now()}`;
    const workspaces = await mkdtemp(path.join(os.tmpdir(), 'tether-fork-crash-'));
    // Workspaces and TETHER_HOME on storage both workers see, as with TETHER_SHARED_WORKSPACES in production.
    const env = {
      TEMPORAL_ADDRESS: h.address,
      TETHER_TASK_QUEUE: taskQueue,
      TETHER_SCRIPTED_URL: h.scripted.url,
      TETHER_TEST_WORKSPACES: workspaces,
      TETHER_SHARED_WORKSPACES: '1',
      TETHER_HOME: await mkdtemp(path.join(os.tmpdir(), 'tether-fork-home-')),
    };
    const first = await startChildWorker(env);
    const tc = await connectTether({ address: h.address, taskQueue });
    let second: Awaited<ReturnType<typeof startChildWorker>> | undefined;
    try {
      const { runId } = await startRun(tc, { ...base, goal: 'crash', model: 'scripted:crash-writer' }, { id: `fork-crash-${Date.now()}` });
      const inRun = (runId: string, file: string) => path.join(workspaces, runId, file);
      await eventually(
        'b.txt to be written',
        () => readFile(inRun(runId, 'b.txt'), 'utf8').catch(() => ''),
        (t) => t.includes('started'),
      );
      first.kill('SIGKILL');
      second = await startChildWorker(env);
      expect((await waitForResult(tc, runId)).status).toBe('completed');

      const atTwo = await forkRun(tc, runId, { step: 2, model: 'scripted:finisher' });
      expect((await waitForResult(tc, atTwo.runId)).status).toBe('completed');
      expect(await readFile(inRun(atTwo.runId, 'a.txt'), 'utf8')).toBe('before the crash');
      expect(await readFile(inRun(atTwo.runId, 'b.txt'), 'utf8')).toBe('started\n');
      expect(existsSync(inRun(atTwo.runId, 'c.txt'))).toBe(false);
    } finally {
      first.kill('SIGKILL');
      second?.kill('SIGTERM');
      await tc.close();
    }
  });
});
