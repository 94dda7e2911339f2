import { spawn } from 'node:child_process';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRunStatus } from '../src/client/run-status.js';
import { controlRun, getTranscript } from '../src/client/runs.js';
import { runCli } from './helpers/cli-process.js';
import type { Script } from '../src/scripted/script.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { eventually } from './helpers/eventually.js';
import { scheduledActivities, settled } from './helpers/history.js';

const CLI = fileURLToPath(new URL('../bin/tether.js', import.meta.url));
const call = (name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ reply: { toolCalls: [{ name, args }], ...extra } });
const finish = (summary: string) => call('finish', { summary });

const scripts: Record<string, Script> = {
  'flaky-primary': { steps: [{ ...finish('x'), faults: [{ kind: '503', times: 100 }], repeat: 10 }] } as Script,
  'steady-backup': { steps: [call('shell', { command: 'true' }), call('shell', { command: 'true' }), finish('finished on the backup')] } as Script,
  'down-a': { steps: [{ ...finish('a recovered'), faults: [{ kind: '503', times: 5 }] }] } as Script,
  'down-b': { steps: [{ ...finish('b recovered'), faults: [{ kind: '503', times: 100 }] }] } as Script,
  'asks-to-wait': {
    steps: [{ ...call('write_file', { path: 'a.txt', content: 'a' }), faults: [{ kind: '429', retryAfterSec: 60, times: 100 }] }, finish('never')],
  } as Script,
  // As asks-to-wait, under a name of its own: a provider whose breaker another test held open would not be asked at all.
  'told-to-wait': { steps: [{ ...finish('never'), faults: [{ kind: '429', retryAfterSec: 60, times: 100 }] }] } as Script,
  'quota-spent': { steps: [{ ...finish('never'), faults: [{ kind: 'quota', times: 100 }], repeat: 10 }] } as Script,
  'answers-at-once': { steps: [call('write_file', { path: 'a.txt', content: 'a' }), finish('finished while the primary waited')] } as Script,
  'always-429': { steps: [{ ...finish('never'), faults: [{ kind: '429', retryAfterSec: 0, times: 100 }] }] } as Script,
  'huge-output': { steps: [call('shell', { command: "head -c 5000000 /dev/zero | tr '\\0' a" }), finish('survived a flood')] } as Script,
  overflows: {
    steps: [
      call('write_file', { path: 'a.txt', content: 'a' }),
      call('write_file', { path: 'b.txt', content: 'b' }),
      call('write_file', { path: 'c.txt', content: 'c' }),
      { ...finish('fits now'), faults: [{ kind: 'overflow' }] },
    ],
  } as Script,
  'overflows-uncompactable': {
    steps: [
      call('write_file', { path: 'a.txt', content: 'a' }),
      call('write_file', { path: 'b.txt', content: 'b' }),
      call('write_file', { path: 'c.txt', content: 'c' }),
      { ...finish('never'), faults: [{ kind: 'overflow', times: 100 }] },
    ],
    compaction: { faults: [{ kind: '500', times: 50 }] },
  } as Script,
  'overflows-always': { steps: [{ ...finish('never'), faults: [{ kind: 'overflow', times: 100 }] }] } as Script,
  'wider-window': { steps: [], after: { toolCalls: [{ name: 'finish', args: { summary: 'fits in the wider window' } }] } } as Script,
  'compaction-fails': {
    steps: [
      call('write_file', { path: 'a.txt', content: 'x'.repeat(3_000) }),
      call('write_file', { path: 'b.txt', content: 'y'.repeat(3_000) }),
      call('write_file', { path: 'c.txt', content: 'z' }),
      finish('carried on uncompacted'),
    ],
    compaction: { faults: [{ kind: '500', times: 50 }] },
  } as Script,
  'long-loop': { steps: [{ ...call('write_file', { path: 'n.txt', content: 'step {{step}}' }), repeat: 100_000 }] } as Script,
  spender: { steps: [{ ...call('write_file', { path: 'n.txt', content: '{{step}}' }, { usage: { prompt: 750, completion: 0 } }), repeat: 100_000 }] } as Script,
  asks: { steps: [call('ask_user', { question: 'Which colour should the button be?' }), finish('painted it {{step}}')] } as Script,
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ scripts });
});
afterAll(async () => h?.stop());

const base = { critic: { policy: 'off' as const } };

describe('resilient model calls', () => {
  it('trips the breaker of a provider that keeps failing and finishes on the fallback model', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:flaky-primary', fallbackModels: ['scripted:steady-backup'] });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'finished on the backup' });
    const primary = h.scripted.requestsFor(runId).filter((r) => r.model === 'flaky-primary');
    expect(primary).toHaveLength(5);
    const status = await h.status(runId);
    expect(status.breakers?.find((b) => b.provider === 'scripted:flaky-primary')?.state).toBe('open');
  });

  it('asks the fallback at once when the primary asks for a long wait, and leaves the primary alone for that long', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:asks-to-wait', fallbackModels: ['scripted:answers-at-once'] });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'finished while the primary waited' });
    // One request, not five a minute apart: the next step goes to the fallback without asking the primary again.
    expect(h.scripted.requestsFor(runId).map((r) => [r.model, r.fault])).toEqual([
      ['asks-to-wait', '429'],
      ['answers-at-once', null],
      ['answers-at-once', null],
    ]);
    const held = (await h.status(runId)).breakers?.find((b) => b.provider === 'scripted:asks-to-wait');
    expect(held?.state).toBe('open');
    expect(Date.parse(held!.openUntil!)).toBeGreaterThan(Date.now() + 30_000);
  });

  it('shows in status a model call waiting out a long Retry-After: what failed and when it is tried again', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:told-to-wait' });
    const status = await eventually(
      'the model call to wait for its second attempt',
      async () => (await readRunStatus(h.tc, runId)).status,
      (s) => (s.retrying?.length ?? 0) > 0,
    );
    expect(status.retrying).toEqual([
      {
        activity: 'callModel',
        attempt: 2,
        lastFailure: expect.stringMatching(/^rate_limit \(HTTP 429\): Rate limit reached/),
        nextAttemptAt: expect.any(String),
      },
    ]);
    expect(Date.parse(status.retrying![0]!.nextAttemptAt!)).toBeGreaterThan(Date.now() + 40_000);
    const cli = await runCli(['status', runId], { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue });
    expect(cli.stdout).toMatch(/retrying: +callModel, attempt 2 at \S+, after: rate_limit \(HTTP 429\)/);
    await controlRun(h.tc, runId, 'kill', { reason: 'seen' });
  });

  it('fails at once, after one request, when the account’s quota is spent and no other model is left, saying retrying will not help', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:quota-spent' });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'failed', cause: expect.stringMatching(/^LLM call failed: quota \(HTTP 429\): .*retrying will not help/) });
    expect(h.scripted.requestsFor(runId)).toHaveLength(1);
  });

  it('asks the fallback at once when the primary’s quota is spent, and the run goes on on it', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:quota-spent', fallbackModels: ['scripted:answers-at-once'] });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'finished while the primary waited' });
    // The primary is not held back (a fallback may be of its own provider): each step asks it once, and it refuses at once.
    expect(h.scripted.requestsFor(runId).map((r) => [r.model, r.fault])).toEqual([
      ['quota-spent', 'quota'],
      ['answers-at-once', null],
      ['quota-spent', 'quota'],
      ['answers-at-once', null],
    ]);
  });

  it("waits while every provider's circuit is open, counting no error for the wait, and says why with the provider's own failure", async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:down-b', limits: { maxConsecutiveErrors: 2 } });
    const waiting = await h.until(runId, (s) => s.waitingForProvider !== undefined, 60_000);
    expect(waiting.waitingForProvider!.why).toMatch(/^scripted:down-b open for \d+ s more: The engine is currently overloaded/);
    expect(Date.parse(waiting.waitingForProvider!.until)).toBeGreaterThan(Date.now());
    // No reply came, yet status shows the outage: the open circuit's refusal carries the worker's breakers.
    expect(waiting.breakers?.find((b) => b.provider === 'scripted:down-b')).toMatchObject({ state: 'open', openUntil: expect.any(String) });
    // Its first call failed after its retries (one error); waiting out the circuit sent nothing, and counts nothing.
    const later = await h.until(runId, (s) => s.waitingForProvider !== undefined && (s.asOf ?? '') > waiting.waitingForProvider!.until, 60_000);
    expect(later).toMatchObject({ state: 'running', consecutiveErrors: 1, emergencyStop: { active: false } });
    await controlRun(h.tc, runId, 'kill', { reason: 'cleanup' });
  }, 90_000);

  it('waits while every provider is down and finishes when one recovers', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:down-a', fallbackModels: ['scripted:down-b'] });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'a recovered' });
    const a = h.scripted.requestsFor(runId).filter((r) => r.model === 'down-a');
    expect(a[a.length - 1].at - a[0].at).toBeGreaterThanOrEqual(9_000);
  }, 90_000);

  it('counts an exhausted 429 budget towards the emergency stop', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:always-429', limits: { maxConsecutiveErrors: 1 } });
    const status = await h.until(runId, (s) => s.state === 'emergency_stopped', 60_000);
    expect(status.emergencyStop.reason).toMatch(/429|rate_limit/);
    expect(h.scripted.requestsFor(runId)).toHaveLength(5);
    await controlRun(h.tc, runId, 'kill', { reason: 'cleanup' });
  }, 90_000);
});

describe('context and history limits', () => {
  it('offloads a huge tool output to the workspace and carries on', async () => {
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-flood-'));
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:huge-output', workspace });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'survived a flood' });
    const tool = (await getTranscript(h.tc, runId)).find((m) => m.role === 'tool')!;
    expect(tool.content.length).toBeLessThan(20_000);
    const full = tool.content.match(/full output in (\S+\.log)/)![1];
    // The log on disk is capped too: its head and tail, and a note of what was dropped.
    const log = path.join(workspace, '.tether', 'outputs', path.basename(full));
    expect((await stat(log)).size).toBeLessThan(3_200_000);
    expect(await readFile(log, 'utf8')).toMatch(/bytes dropped: this log keeps the first \d+ and the last \d+ bytes of 5000000\]/);
  });

  it('compacts the transcript when the provider reports a context overflow, then succeeds', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:overflows' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'fits now' });
    const transcript = await getTranscript(h.tc, runId);
    expect(transcript.some((m) => m.role === 'user' && m.source === 'summary' && m.content.includes('Scripted summary'))).toBe(true);
  });

  it('fails the run at once, saying why, when the context overflows and compaction cannot shorten it', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:overflows-always' });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'failed' });
    expect(result.cause).toMatch(
      /^the context is too long for the model, and compaction did not make it fit \(scripted:overflows-always: .*maximum context length.*; nothing older is left to summarise\)$/,
    );
    // Asked once: the same context is not sent again into the same overflow (it went on into an emergency stop).
    expect(h.scripted.requestsFor(runId)).toHaveLength(1);
    // When the summary call itself fails, the cause says that, not that the summary was too short.
    const uncompactable = await h.result(await h.start({ ...base, goal: 'x', model: 'scripted:overflows-uncompactable' }));
    expect(uncompactable).toMatchObject({ status: 'failed' });
    expect(uncompactable.cause).toMatch(/maximum context length.*; compaction failed: compaction: The server had an error/);
    // A fallback model may have a larger window: it is asked before the run gives up.
    const rescued = await h.start({ ...base, goal: 'x', model: 'scripted:overflows-always', fallbackModels: ['scripted:wider-window'] });
    expect(await h.result(rescued)).toMatchObject({ status: 'completed', summary: 'fits in the wider window' });
  });

  it('keeps the uncompacted context when compaction fails, and carries on', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:compaction-fails', limits: { maxContextChars: 5_000 } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'carried on uncompacted' });
    const transcript = await getTranscript(h.tc, runId);
    expect(transcript.some((m) => m.role === 'user' && m.source === 'summary')).toBe(false);
    expect(h.scripted.requestsFor(runId).some((r) => r.fault === '500')).toBe(true);
  });

  it('continues as new, transparently: status, steer and kill work across the chain', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:long-loop', limits: { maxSteps: 10_000, maxHistoryEvents: 200 } });
    const status = await h.until(runId, (s) => (s.continuedAsNew ?? 0) >= 2, 120_000);
    expect(status.step).toBeGreaterThan(20);
    await controlRun(h.tc, runId, 'steer', { message: 'STEER ACROSS THE CHAIN' });
    const steered = await h.until(runId, (s) => s.step > status.step + 2);
    const later = h.scripted.requestsFor(runId).filter((r) => r.step > status.step);
    expect(later.some((r) => JSON.stringify(r.body.messages).includes('STEER ACROSS THE CHAIN'))).toBe(true);
    await controlRun(h.tc, runId, 'kill', { reason: 'long enough' });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'killed', cause: 'long enough' });
    expect(result.steps).toBeGreaterThanOrEqual(steered.step);
  }, 180_000);
});

describe('budget ceiling', () => {
  it('warns at 75, 80 and 90 %, pauses at the ceiling with no call past it, resumes on approval, and can be killed while paused', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:spender', limits: { budgetUsd: 0.01, maxSteps: 1_000 } });
    const paused = await h.until(runId, (s) => s.state === 'awaiting_approval');
    expect(paused.warnings.filter((w) => /budget (75|80|90)% used/.test(w))).toHaveLength(3);
    expect(paused.costUsd).toBeGreaterThanOrEqual(0.01);
    // Settled, with nothing pending, a paused run can make no call until someone approves: no call went past the ceiling.
    const handle = h.tc.client.workflow.getHandle(runId);
    await settled(handle);
    const calls = (await scheduledActivities(handle)).filter((type) => type === 'callModel');
    expect(h.scripted.requestsFor(runId)).toHaveLength(calls.length);
    expect(paused.step).toBe(calls.length);
    const approved = await controlRun(h.tc, runId, 'approve', { addBudgetUsd: 0.005 });
    expect(approved.budgetUsd).toBeCloseTo(0.015);
    await h.until(runId, (s) => s.state === 'awaiting_approval' && s.costUsd >= 0.015);
    // The call of the reply that reached the ceiling was paid for: it waited for the approval and ran, and was not asked for again.
    const tools = (await getTranscript(h.tc, runId)).filter((m) => m.role === 'tool');
    expect(tools.filter((m) => /not run/.test(m.content))).toEqual([]);
    expect(tools[paused.step - 1]).toMatchObject({ success: true, content: expect.stringMatching(/^wrote \d+ bytes to n\.txt/) });
    expect(h.scripted.requestsFor(runId).map((r) => r.step)).toEqual(Array.from({ length: h.scripted.requestsFor(runId).length }, (_, i) => i));
    await controlRun(h.tc, runId, 'kill', { reason: 'too expensive' });
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: 'too expensive' });
  }, 60_000);

  it('keeps run --wait following a run paused at its budget, and says how to let it go on', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const runId = `budget-wait-${Date.now()}`;
    const args = ['run', '--id', runId, '--model', 'scripted:spender', '--budget-usd', '0.01', '--max-steps', '1000', '--critic', 'off', '--wait', 'spend'];
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const hint = `it waits for more budget: tether approve ${runId} --add-usd <amount>`;
    await eventually(
      'run --wait to say how the paused run goes on',
      async () => stderr,
      (text) => text.includes(hint),
      { timeoutMs: 30_000 },
    );
    expect(stderr).toContain('→ awaiting_approval');
    expect(child.exitCode).toBeNull();
    await controlRun(h.tc, runId, 'kill', { reason: 'seen the pause' });
    expect(await exited).toBe(1);
  }, 60_000);
});

describe('human input', () => {
  it('blocks on ask_user, exits the CLI with 10, and completes once answered', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const runId = `asks-${Date.now()}`;
    const cli = await runCli(
      ['run', '--id', runId, '--model', 'scripted:asks', '--tools', 'ask_user,finish', '--critic', 'off', '--wait', '--output', 'json', 'paint the button'],
      env,
    );
    expect(cli.code).toBe(10);
    expect(cli.stderr).toContain('Which colour should the button be?');
    expect(JSON.parse(cli.stdout.trim().split('\n').pop()!)).toMatchObject({ runId, state: 'blocked', question: 'Which colour should the button be?' });
    const answered = await runCli(['answer', runId, 'blue', '--output', 'json'], env);
    expect(answered.code).toBe(0);
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
    const tool = (await getTranscript(h.tc, runId)).find((m) => m.role === 'tool' && m.toolName === 'ask_user');
    expect(tool?.content).toBe('blue');
    // Its history says what it asked, where it waited.
    expect((await runCli(['history', runId], env)).stdout).toContain('→ ask_user "Which colour should the button be?"');
  }, 60_000);
});
