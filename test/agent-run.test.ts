import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlRun, getTranscript, TetherError } from '../src/client/runs.js';
import { listRuns } from '../src/client/list.js';
import type { Script } from '../src/scripted/script.js';
import { eventually } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { processesWith, uniqueSleep } from './helpers/processes.js';

const SECRET = 'sk-test-DO-NOT-LEAK-0123456789abcdef';
// Tools run in their own PID namespace: the hanging one is found by its command line, not by a pid it prints.
const HANGING = uniqueSleep();

const call = (name: string, args: Record<string, unknown>) => ({ name, args });
const tools = (...calls: Array<{ name: string; args: Record<string, unknown> }>) => ({ reply: { toolCalls: calls } });
const text = (t: string) => ({ reply: { text: t } });

const scripts: Record<string, Script> = {
  'every-tool': {
    steps: [
      tools(call('write_file', { path: 'notes/hello.txt', content: 'hello tether' })),
      tools(call('read_file', { path: 'notes/hello.txt' })),
      tools(call('shell', { command: 'cat notes/hello.txt | tr a-z A-Z > shout.txt && cat shout.txt' })),
      tools(call('finish', { summary: 'wrote, read and shouted' })),
    ],
  } as Script,
  'plain-answer': { steps: [text('The answer is 42.')] } as Script,
  'empty-then-answers': { steps: [{ reply: {} }, text('   \n '), text('Now with words.')] } as Script,
  'verify-fix': {
    steps: [
      tools(call('write_file', { path: 'ok.txt', content: 'no' })),
      tools(call('finish', { summary: 'first try' })),
      tools(call('write_file', { path: 'ok.txt', content: 'yes' })),
      tools(call('finish', { summary: 'fixed' })),
    ],
  } as Script,
  'never-fixes': { steps: [tools(call('finish', { summary: 'trust me' }))], after: { toolCalls: [call('finish', { summary: 'trust me again' })] } } as Script,
  'busy-forever': { steps: [], after: { toolCalls: [call('shell', { command: 'true' })] } } as Script,
  'hangs-in-tool': { steps: [tools(call('shell', { command: `sleep ${HANGING}` }))] } as Script,
  'bad-request': { steps: [{ ...text('never'), faults: [{ kind: '400' }] }] } as Script,
  'rate-limited': { steps: [{ ...text('after the wait'), faults: [{ kind: '429', retryAfterSec: 2 }] }] } as Script,
  'unavailable-once': { steps: [{ ...text('recovered'), faults: [{ kind: '503' }] }] } as Script,
  'hangs-once': { steps: [{ ...text('second attempt answered'), faults: [{ kind: 'hang' }] }] } as Script,
  'cut-once': { steps: [{ ...tools(call('write_file', { path: 'a.txt', content: 'a' })), faults: [{ kind: 'cut' }] }, text('clean reply')] } as Script,
  'malformed-once': {
    steps: [{ ...tools(call('write_file', { path: 'a.txt', content: 'a' })), faults: [{ kind: 'malformed' }] }, text('clean reply')],
  } as Script,
  'garbage-args': {
    steps: [
      { reply: { toolCalls: [{ name: 'write_file', rawArguments: '{"path": "x.txt", "content": ' }] } },
      tools(call('finish', { summary: 'recovered from garbage' })),
    ],
  } as Script,
  escapes: {
    steps: [
      tools(
        call('read_file', { path: '../../etc/passwd' }),
        call('read_file', { path: '/etc/passwd' }),
        call('write_file', { path: 'link/evil.txt', content: 'x' }),
      ),
      tools(call('finish', { summary: 'denied' })),
    ],
  } as Script,
  'finishes-late': {
    steps: [tools(call('write_file', { path: 'a.txt', content: 'a' })), { ...tools(call('finish', { summary: 'done' })), delayMs: 3_000 }],
    after: { toolCalls: [call('finish', { summary: 'done again' })] },
  } as Script,
  'print-env': { steps: [tools(call('shell', { command: 'env' })), tools(call('finish', { summary: 'env printed' }))] } as Script,
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ scripts, env: { ...process.env, OPENAI_API_KEY: SECRET, ANTHROPIC_API_KEY: SECRET } });
});
afterAll(async () => h?.stop());

const base = { critic: { policy: 'off' as const } };

describe('a durable agent run', () => {
  it('completes a run that uses every tool, with the files really written', async () => {
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-every-'));
    const runId = await h.start({ ...base, goal: 'use every tool', model: 'scripted:every-tool', workspace });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'wrote, read and shouted', steps: 4 });
    expect(await readFile(path.join(workspace, 'shout.txt'), 'utf8')).toBe('HELLO TETHER');
    const requests = h.scripted.requestsFor(runId);
    const lastMessages = requests[requests.length - 1].body.messages as Array<{ role: string; content: string }>;
    expect(lastMessages.some((m) => m.role === 'tool' && String(m.content).includes('HELLO TETHER'))).toBe(true);
    expect(result.usage.totalTokens).toBeGreaterThan(0);
  });

  it('takes an answer with no tool call as the summary', async () => {
    const runId = await h.start({ ...base, goal: 'answer', model: 'scripted:plain-answer' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'The answer is 42.', steps: 1 });
  });

  it('takes an empty or blank reply for no answer: the model is told, each counts as a failure, and the run goes on', async () => {
    const runId = await h.start({ ...base, goal: 'answer', model: 'scripted:empty-then-answers' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'Now with words.', steps: 3 });
    const notices = (await getTranscript(h.tc, runId)).filter((m) => m.role === 'user' && m.source === 'notice');
    expect(notices.map((m) => m.content)).toEqual(Array(2).fill(expect.stringContaining('Your last reply was empty')));
  });

  it('passes verification after the model fixes what the gate reported', async () => {
    const runId = await h.start({
      ...base,
      goal: 'make ok.txt say yes',
      model: 'scripted:verify-fix',
      verify: { command: 'grep -q yes ok.txt || (echo "ok.txt says: $(cat ok.txt)"; exit 1)' },
    });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'fixed', verify: { passed: true, attempts: 2 } });
    const third = h.scripted.requestsFor(runId).find((r) => r.step === 2)!;
    expect(JSON.stringify(third.body.messages)).toContain('ok.txt says: no');
  });

  it('tells the model when its verification cannot be run, gives the attempt back, and halts the run when it keeps failing', async () => {
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-gone-'));
    const runId = await h.start({
      ...base,
      goal: 'x',
      model: 'scripted:finishes-late',
      workspace,
      verify: { command: 'true', maxAttempts: 3 },
      limits: { maxConsecutiveErrors: 2 },
    });
    await eventually('the first step to write a.txt', () => existsSync(path.join(workspace, 'a.txt')));
    // The workspace becomes a file while the model thinks: the finish's verification has nowhere to run.
    await rm(workspace, { recursive: true, force: true });
    await writeFile(workspace, 'not a directory');
    const stopped = await h.until(runId, (s) => s.state === 'emergency_stopped', 60_000);
    expect(stopped.emergencyStop.reason).toMatch(/verification could not be run: the workspace .* is not a directory/);
    const finishes = (await getTranscript(h.tc, runId)).filter((m) => m.role === 'tool' && m.toolName === 'finish');
    expect(finishes).toHaveLength(2);
    for (const m of finishes) expect(m).toMatchObject({ success: false, content: expect.stringContaining('verification could not be run') });
    expect(h.scripted.requestsFor(runId)).toHaveLength(3);
    await controlRun(h.tc, runId, 'kill', { reason: 'test over' });
    await rm(workspace, { force: true });
  });

  it('ends needs_fix when verification keeps failing', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:never-fixes', verify: { command: 'false', maxAttempts: 2 } });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'needs_fix', verify: { passed: false, attempts: 2 } });
    expect(result.cause).toMatch(/verification failed 2 times/);
  });

  it('ends failed at maxSteps with that cause', async () => {
    const runId = await h.start({ ...base, goal: 'loop', model: 'scripted:busy-forever', limits: { maxSteps: 3 } });
    expect(await h.result(runId)).toMatchObject({ status: 'failed', cause: 'maxSteps reached (3)', steps: 3 });
  });

  it('ends timeout at maxRuntime and kills the hanging tool', async () => {
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-hang-'));
    const runId = await h.start({ ...base, goal: 'hang', model: 'scripted:hangs-in-tool', workspace, limits: { maxRuntime: '4s' } });
    const result = await h.result(runId);
    expect(result.status).toBe('timeout');
    expect(processesWith(HANGING)).toEqual([]);
  });

  it('fails at once on a 400, after exactly one request', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:bad-request' });
    const result = await h.result(runId);
    expect(result.status).toBe('failed');
    expect(result.cause).toMatch(/HTTP 400/);
    expect(h.scripted.requestsFor(runId)).toHaveLength(1);
  });

  it('waits at least Retry-After on a 429 and then succeeds', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:rate-limited' });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'after the wait' });
    const [first, second] = h.scripted.requestsFor(runId);
    expect(first.fault).toBe('429');
    expect(second.at - first.at).toBeGreaterThanOrEqual(2_000);
  });

  it('retries a 503 and succeeds', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:unavailable-once' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'recovered' });
    expect(h.scripted.requestsFor(runId).map((r) => r.fault)).toEqual(['503', null]);
  });

  it('cuts a hung model call at its timeout and retries it', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:hangs-once', limits: { llmTimeout: '2s' } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'second attempt answered' });
    expect(h.scripted.requestsFor(runId).map((r) => r.fault)).toEqual(['hang', null]);
  });

  it('counts no error against a run cancelled through Temporal while its model call is in flight', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:hangs-once', limits: { llmTimeout: '60s' } });
    await eventually(
      `the model call of ${runId} to be in flight`,
      async () => h.scripted.requestsFor(runId).length,
      (n) => n > 0,
    );
    await h.tc.client.workflow.getHandle(runId).cancel();
    expect(await h.result(runId)).toMatchObject({ status: 'cancelled' });
    expect(await h.status(runId)).toMatchObject({ state: 'cancelled', consecutiveErrors: 0 });
  });

  it('retries a malformed reply', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:malformed-once' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'clean reply' });
    // Asked whole after the garbled stream, and the next step too: the worker remembers, and no step pays for two requests.
    expect(h.scripted.requestsFor(runId).map((r) => Boolean(r.body.stream))).toEqual([true, false, false]);
  });

  it('retries a reply whose connection was cut mid-stream as a network failure, and goes on streaming', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:cut-once' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'clean reply' });
    // Not a garbled reply: no step is then asked whole, so live tokens and per-chunk heartbeats stay on.
    expect(h.scripted.requestsFor(runId).map((r) => [r.fault, Boolean(r.body.stream)])).toEqual([
      ['cut', true],
      [null, true],
      [null, true],
    ]);
  });

  it('turns garbage tool arguments into a tool result the model reads', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:garbage-args' });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'recovered from garbage' });
    const second = h.scripted.requestsFor(runId).find((r) => r.step === 1)!;
    expect(JSON.stringify(second.body.messages)).toMatch(/invalid arguments/);
  });

  it('denies workspace escapes: parent paths, absolute paths and symlinks', async () => {
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-esc-'));
    const outside = await mkdtemp(path.join(os.tmpdir(), 'tether-outside-'));
    await symlink(outside, path.join(workspace, 'link'));
    const runId = await h.start({ ...base, goal: 'escape', model: 'scripted:escapes', workspace });
    await h.result(runId);
    const toolMessages = (h.scripted.requestsFor(runId).find((r) => r.step === 1)!.body.messages as Array<{ role: string; content: string }>).filter(
      (m) => m.role === 'tool',
    );
    expect(toolMessages).toHaveLength(3);
    for (const m of toolMessages) expect(m.content).toMatch(/escapes the workspace/);
    expect(existsSync(path.join(outside, 'evil.txt'))).toBe(false);
    expect(JSON.stringify(toolMessages)).not.toContain('root:x:0');
  });

  it('gives tools an environment without provider keys, and keeps keys out of the history', async () => {
    const runId = await h.start({ ...base, goal: 'print env', model: 'scripted:print-env' });
    expect((await h.result(runId)).status).toBe('completed');
    const envOutput = JSON.stringify(h.scripted.requestsFor(runId).find((r) => r.step === 1)!.body.messages);
    expect(envOutput).toContain('PATH=');
    expect(envOutput).not.toContain(SECRET);
    expect(envOutput).not.toContain('OPENAI_API_KEY');
    const history = await h.tc.client.workflow.getHandle(runId).fetchHistory();
    expect(JSON.stringify(history)).not.toContain(SECRET);
  });

  it('rejects a bad RunSpec before any workflow starts', async () => {
    const id = `bad-spec-${Date.now()}`;
    const attempt = h.start({ goal: '', model: 'gpt-4', limits: { maxSteps: -1, surprise: true } } as never, id);
    await expect(attempt).rejects.toBeInstanceOf(TetherError);
    await expect(attempt).rejects.toThrow(/goal.*model.*limits/s);
    await expect(h.tc.client.workflow.getHandle(id).describe()).rejects.toThrow();
    expect((await listRuns(h.tc, {})).some((r) => r.runId === id)).toBe(false);
  });
});
