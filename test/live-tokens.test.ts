import { type CliRun, runCli } from './helpers/cli-process.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TokenEvent } from '../src/api/token-stream.js';
import { followTokens } from '../src/client/token-follow.js';
import { connectTether, startRun } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startChildWorker } from './helpers/child-worker.js';
import { eventually } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { eventTypes, historyEvents } from './helpers/history.js';

const TEXT = 'Streaming, one token at a time: the quick brown fox jumps over the lazy dog.';
const finish = { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } };
const answer = (faults: Script['steps'][number]['faults']) => ({ reply: { text: TEXT }, faults }) as Script['steps'][number];

const scripts: Record<string, Script> = {
  // The reply's stream comes a piece at a time over seconds: a slow provider.
  trickle: { steps: [answer([{ kind: 'trickle', ms: 4_000, times: 1 }]), finish] } as Script,
  // The same run, its reply sent at once: what the history of a step holds without live tokens.
  instant: { steps: [answer([]), finish] } as Script,
  // Both attempts trickle, so the first is still streaming when its worker dies.
  'trickle-twice': { steps: [answer([{ kind: 'trickle', ms: 8_000, times: 2 }]), finish] } as Script,
};

/** How often `text` appears in the run's history, payloads read as text. */
async function occurrences(h: Harness, runId: string, text: string): Promise<number> {
  const events = await historyEvents(h.tc.client.workflow.getHandle(runId));
  const raw = JSON.stringify(events, (_key, value) => (value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value));
  return raw.split(text).length - 1;
}

function cliRun(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return runCli(args, env);
}

describe('live tokens', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ scripts });
  });
  afterAll(async () => h?.stop());

  it('streams a model call’s tokens to tether run --output stream-json as they arrive, and keeps them out of history', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const id = `tokens-${Date.now()}`;
    const out = await cliRun(['run', '--id', id, '--model', 'scripted:trickle', '--critic', 'off', '--wait', '--output', 'stream-json', 'say it slowly'], env);
    expect(out.code).toBe(0);
    const events = out.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const tokens = events.filter((e) => e.type === 'token');
    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.map((e) => e.text).join('')).toBe(TEXT);
    expect(new Set(tokens.map((e) => `${e.step}/${e.attempt}`))).toEqual(new Set([`${tokens[0].step}/1`]));
    // Every token arrived before the step's reply was known to the run.
    const reply = events.findIndex((e) => e.type === 'llm_result' && e.text === TEXT);
    expect(reply).toBeGreaterThan(-1);
    expect(tokens[0].step).toBe(events[reply].step);
    expect(events.map((e) => e.type).lastIndexOf('token')).toBeLessThan(reply);
    expect(events.find((e) => e.type === 'token_end')).toMatchObject({ ok: true, attempt: 1 });
    // The step starts before its first token, and once.
    const started = events.filter((e) => e.type === 'step_started' && e.step === tokens[0].step);
    expect(started).toHaveLength(1);
    expect(events.indexOf(started[0])).toBeLessThan(events.indexOf(tokens[0]));
    // Every end of a call's stream comes after its step began, even a call that streamed no token.
    for (const end of events.filter((e) => e.type === 'token_end')) {
      const start = events.findIndex((e) => e.type === 'step_started' && e.step === end.step);
      expect(start, `step_started for ${end.step}`).toBeGreaterThan(-1);
      expect(start).toBeLessThan(events.indexOf(end));
    }

    // The history is that of the same run with its reply sent at once: no signal, no event, no text more.
    const control = await h.start({ goal: 'say it slowly', model: 'scripted:instant', critic: { policy: 'off' } });
    await h.result(control);
    const handle = (runId: string) => h.tc.client.workflow.getHandle(runId);
    expect(await eventTypes(handle(id))).toEqual(await eventTypes(handle(control)));
    expect((await eventTypes(handle(id))).filter((t) => t.includes('SIGNALED'))).toEqual([]);
    expect(await occurrences(h, id, 'the quick brown fox')).toBe(await occurrences(h, control, 'the quick brown fox'));
  }, 60_000);

  it('writes the tokens as text on stderr in text mode, the reply on a line of its own, and the result on stdout', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const out = await cliRun(['run', '--id', `tokens-text-${Date.now()}`, '--model', 'scripted:trickle', '--critic', 'off', '--wait', 'say it slowly'], env);
    expect(out.code).toBe(0);
    expect(out.stderr.split('\n')).toContain(TEXT);
    expect(out.stdout).toMatch(/^status:\s+completed$/m);
  }, 60_000);
});

describe('live tokens across a worker’s death', () => {
  let scripted: ScriptedServer;
  beforeAll(async () => {
    scripted = await startScriptedServer({ port: 0, scripts });
  });
  afterAll(async () => scripted?.close());

  it('says the stream was interrupted when the worker holding the call dies, then streams the retried call to its end', async () => {
    const address = inject('temporalAddress');
    const taskQueue = `tokens-kill-${Date.now()}`;
    const env = { TEMPORAL_ADDRESS: address, TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url, TETHER_SHARED_WORKSPACES: '1' };
    const workers = [await startChildWorker(env), await startChildWorker(env)];
    const tc = await connectTether({ address, taskQueue });
    const stop = new AbortController();
    try {
      const { runId } = await startRun(
        tc,
        { goal: 'survive', model: 'scripted:trickle-twice', critic: { policy: 'off' } },
        { id: `tokens-kill-${Date.now()}` },
      );
      const events: TokenEvent[] = [];
      const following = followTokens(tc, runId, (e) => events.push(e), { signal: stop.signal });
      await eventually(
        'the first tokens',
        async () => events,
        (seen) => seen.some((e) => e.type === 'token'),
        { timeoutMs: 30_000 },
      );
      // The worker holding the call is the one its identity (pid@host) names.
      const { raw } = await tc.client.workflow.getHandle(runId).describe();
      const holder = raw.pendingActivities?.find((a) => a.activityType?.name === 'callModel')?.lastWorkerIdentity ?? '';
      const dying = workers.find((w) => holder.startsWith(`${w.pid}@`));
      expect(dying, `a child worker holds the call (${holder})`).toBeDefined();
      dying!.kill('SIGKILL');

      expect(await waitForResult(tc, runId)).toMatchObject({ status: 'completed' });
      await following;
      const lost = events.findIndex((e) => e.type === 'token_interrupted');
      expect(events[lost]).toMatchObject({ attempt: 1, worker: holder });
      expect((events[lost] as { message: string }).message).toBe(`token stream interrupted: worker ${holder} lost; the call is being retried (attempt 2)`);
      const retried = events.slice(lost + 1);
      expect(
        retried
          .filter((e) => e.type === 'token')
          .map((e) => (e as { text: string }).text)
          .join(''),
      ).toBe(TEXT);
      expect(retried.every((e) => e.attempt === 2)).toBe(true);
      expect(retried.at(-1)).toMatchObject({ type: 'token_end', ok: true, attempt: 2 });
      expect(events.slice(0, lost).every((e) => e.type === 'token' && e.attempt === 1)).toBe(true);
    } finally {
      stop.abort();
      for (const w of workers) w.kill('SIGKILL');
      await tc.close();
    }
  }, 120_000);
});
