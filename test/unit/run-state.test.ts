import { describe, expect, it } from 'vitest';
import { parseRunSpec } from '../../src/api/spec.js';
import { toModelPrompt } from '../../src/llm/messages.js';
import { RunState } from '../../src/run/run-state.js';
import { ControlRejected } from '../../src/run/run-types.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function newRun(overrides: Record<string, unknown> = {}) {
  const spec = parseRunSpec({ goal: 'do it', model: 'scripted:x', ...overrides });
  return new RunState('run-1', spec, T0, T0 + 60_000);
}

const failed = { success: false, output: '', error: 'exit 1' };
const ok = { success: true, output: 'fine' };
const call = (id: string) => ({ id, name: 'shell', args: { command: 'x' } });

describe('the run state machine', () => {
  it("says at the deadline whether it was the run's maxRuntime or the critic's backstop, and how to have more", () => {
    const backstopped = newRun();
    backstopped.expire(T0 + 60_000);
    expect(backstopped.status(T0 + 60_000)).toMatchObject({ state: 'timeout' });
    expect(backstopped.status(T0 + 60_000).cause).toBe(
      'deadline reached (2026-01-01T00:01:00.000Z): with no limits.maxRuntime, a run with a critic has softTimeout × backstopMultiplier (120 s × 3) and what extend adds; give a longer run --max-runtime',
    );
    for (const overrides of [{ limits: { maxRuntime: '1m' } }, { critic: { policy: 'off' } }]) {
      const limited = newRun(overrides);
      limited.expire(T0 + 60_000);
      expect(limited.status(T0 + 60_000).cause).toBe('maxRuntime reached (deadline 2026-01-01T00:01:00.000Z)');
    }
  });

  it('says at the deadline that the run was waiting for a failing provider, and why', () => {
    const run = newRun({ limits: { maxRuntime: '1m' } });
    run.waitForProviders(T0 + 90_000, 'circuit open for openai: quota (HTTP 429): You exceeded your current quota');
    run.expire(T0 + 60_000);
    expect(run.status(T0 + 60_000).cause).toBe(
      "maxRuntime reached (deadline 2026-01-01T00:01:00.000Z); it was waiting for its model's provider: circuit open for openai: quota (HTTP 429): You exceeded your current quota",
    );
  });

  it('shows a wait on open circuits until its end or a reply, with no error counted, and a breaker whose window passed as half-open', () => {
    const run = newRun();
    const until = new Date(T0 + 10_000).toISOString();
    run.noteBreakers([{ provider: 'openai', state: 'open', openUntil: until }]);
    run.waitForProviders(T0 + 10_000, 'openai open for 10 s more: 503');
    expect(run.status(T0 + 1_000)).toMatchObject({
      state: 'running',
      consecutiveErrors: 0,
      waitingForProvider: { until, why: 'openai open for 10 s more: 503' },
      breakers: [{ provider: 'openai', state: 'open', openUntil: until }],
    });
    const later = run.status(T0 + 10_000);
    expect(later.waitingForProvider).toBeUndefined();
    expect(later.breakers).toEqual([{ provider: 'openai', state: 'half_open', openUntil: null }]);
    run.waitForProviders(T0 + 20_000, 'again');
    run.recordModelReply(reply(0.1), T0 + 12_000);
    expect(run.status(T0 + 12_000).waitingForProvider).toBeUndefined();
  });

  it('trips the emergency stop at the fifth consecutive failure and pauses the run', () => {
    const run = newRun();
    for (let i = 1; i <= 4; i++) expect(run.recordToolResult(call(`c${i}`), failed, T0 + i).tripped).toBeNull();
    const { tripped: reason } = run.recordToolResult(call('c5'), failed, T0 + 5);
    expect(reason).toMatch(/Maximum consecutive errors reached \(5\)/);
    expect(run.state).toBe('emergency_stopped');
    expect(run.safety.emergencyState()).toEqual({ emergency_stop: true, consecutive_errors: 5, max_consecutive_errors: 5 });
    expect(run.status(T0 + 5).emergencyStop).toMatchObject({ active: true, since: new Date(T0 + 5).toISOString() });
  });

  it('resets the count on a successful tool and after a clear', () => {
    const run = newRun({ limits: { maxConsecutiveErrors: 3 } });
    run.recordToolResult(call('a'), failed, T0);
    run.recordToolResult(call('b'), failed, T0);
    run.recordToolResult(call('c'), ok, T0);
    expect(run.safety.errors).toBe(0);
    for (const id of ['d', 'e', 'f']) run.recordToolResult(call(id), failed, T0);
    expect(run.state).toBe('emergency_stopped');
    run.apply('clearEmergency', run.validate('clearEmergency', {}), T0 + 10);
    expect(run.state).toBe('running');
    expect(run.safety.errors).toBe(0);
  });

  it('rejects clearing a stop that is not active, with the reference message', () => {
    expect(() => newRun().validate('clearEmergency', {})).toThrow('Emergency stop is not active');
  });

  it('rejects bad control payloads with a message naming the field', () => {
    const run = newRun();
    expect(() => run.validate('steer', { message: '  ' })).toThrow(/steer: message: steer message must not be empty/);
    expect(() => run.validate('extend', { by: '-5m' })).toThrow(ControlRejected);
    expect(() => run.validate('extend', {})).toThrow(/needs "by"/);
    expect(() => run.validate('extend', { steps: 10, extra: 1 })).toThrow(/extra/);
    expect(() => run.validate('extend', { steps: 1.5 })).toThrow('steps must be a whole number');
    expect(() => run.validate('kill', {})).toThrow(/reason/);
  });

  it('keeps a kill sticky: nothing afterwards changes the ending', () => {
    const run = newRun();
    run.apply('kill', run.validate('kill', { reason: 'operator said so' }), T0);
    run.end({ status: 'timeout', cause: 'deadline' }, T0 + 1);
    expect(run.result()).toMatchObject({ status: 'killed', cause: 'operator said so' });
    expect(() => run.validate('steer', { message: 'hi' })).toThrow(/already ended \(killed\)/);
  });

  it('suspends the deadline while paused and resumes it shifted by the pause', () => {
    const run = newRun({ limits: { maxConsecutiveErrors: 1 } });
    run.recordToolResult(call('a'), failed, T0 + 10_000);
    expect(run.paused).toBe(true);
    expect(run.status(T0 + 40_000).deadline).toBe(new Date(T0 + 90_000).toISOString());
    run.apply('clearEmergency', {}, T0 + 40_000);
    expect(run.limits.remainingMs(T0 + 40_000)).toBe(50_000);
  });

  it('extends the deadline and the step ceiling without wrapping', () => {
    const run = newRun({ limits: { maxSteps: 5 } });
    run.apply('extend', run.validate('extend', { by: '10m', steps: 7 }), T0);
    expect(run.limits.steps).toBe(12);
    expect(run.limits.deadline(T0)).toBe(T0 + 60_000 + 600_000);
    run.limits.extend(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    expect(run.limits.steps).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('queues steers in order and moves them into the transcript before the next call', () => {
    const run = newRun();
    run.apply('steer', { message: 'first' }, T0);
    run.apply('steer', { message: 'second' }, T0);
    expect(run.takeSteers()).toEqual(['first', 'second']);
    expect(run.transcript.slice(-2).map((m) => m.content)).toEqual(['first', 'second']);
    expect(run.takeSteers()).toEqual([]);
  });

  it('survives a snapshot round trip with its counts, limits and transcript', () => {
    const run = newRun();
    run.recordToolResult(call('a'), failed, T0);
    run.apply('extend', { steps: 3 }, T0);
    const copy = new RunState('run-1', run.spec, T0 + 5, 0, JSON.parse(JSON.stringify(run.snapshot())));
    expect(copy.safety.errors).toBe(1);
    expect(copy.limits.steps).toBe(53);
    expect(copy.transcript).toEqual(run.transcript);
    expect(copy.status(T0 + 5).startedAt).toBe(new Date(T0).toISOString());
  });
});

const reply = (costUsd = 0, toolCalls: ReturnType<typeof call>[] = []) => ({
  text: 'thinking',
  toolCalls,
  usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
  costUsd,
  warnings: [],
});

describe('the run state: people in the loop', () => {
  it('pauses at the budget ceiling, refuses work, and resumes once more budget is approved', () => {
    const run = newRun({ limits: { budgetUsd: 1 } });
    expect(() => run.validate('approve', { addBudgetUsd: 1 })).toThrow('approve: the run is not awaiting budget approval');
    run.recordModelReply(reply(1), T0 + 1_000);
    expect(run.state).toBe('awaiting_approval');
    expect(run.paused).toBe(true);
    expect(run.admit(call('x')).kind).toBe('not_run');
    expect(run.warnings).toContain('budget exhausted ($1.00 of $1.00): paused until approved');
    expect(run.apply('approve', run.validate('approve', { addBudgetUsd: 0.5 }), T0 + 5_000)).toBe('budget raised by $0.5 to $1.5');
    expect(run.state).toBe('running');
    expect(run.status(T0 + 5_000)).toMatchObject({ budgetUsd: 1.5, costUsd: 1 });
  });

  it('says, when an approval does not lift the budget above what was spent, that the run stays paused and how much more it takes', () => {
    const run = newRun({ limits: { budgetUsd: 1 } });
    run.recordModelReply(reply(2.2), T0 + 1_000);
    expect(run.apply('approve', run.validate('approve', { addBudgetUsd: 0.5 }), T0 + 2_000)).toBe('budget raised by $0.5 to $1.5; still paused');
    expect(run.state).toBe('awaiting_approval');
    expect(run.status(T0 + 2_000).warnings).toContain(
      'budget raised by $0.5 to $1.5, still at or below the $2.2 spent: paused; approve more than $0.7 to resume',
    );
    run.apply('approve', run.validate('approve', { addBudgetUsd: 1 }), T0 + 3_000);
    expect(run.state).toBe('running');
  });

  it('keeps an approved budget to the micro-dollar (0.5 + 0.1 is 0.6, not 0.6000000000000001)', () => {
    const run = newRun({ limits: { budgetUsd: 0.5 } });
    run.recordModelReply(reply(0.5), T0 + 1_000);
    expect(run.apply('approve', run.validate('approve', { addBudgetUsd: 0.1 }), T0 + 2_000)).toBe('budget raised by $0.1 to $0.6');
    expect(run.status(T0 + 2_000).budgetUsd).toBe(0.6);
  });

  it('shows no next escalation of its critic once the run has ended', () => {
    const run = newRun();
    const report = { policy: 'extend-once', softTimeoutMs: 60_000, nextEscalationAt: new Date(T0 + 60_000).toISOString(), decisions: [] };
    run.recordCriticReport(report, T0);
    expect(run.status(T0).critic?.nextEscalationAt).toBe(report.nextEscalationAt);
    run.apply('kill', { reason: 'done with it' }, T0 + 1_000);
    expect(run.status(T0 + 1_000).critic).toMatchObject({ policy: 'extend-once', nextEscalationAt: null });
  });

  it('blocks on a question and gives the answer to the call that asked', () => {
    const run = newRun();
    const ask = { id: 'ask-1', name: 'ask_user', args: { question: 'which file?' } };
    expect(() => run.validate('answer', { text: 'a.txt' })).toThrow('answer: the run is not waiting for an answer');
    run.ask('which file?', T0);
    expect(run.state).toBe('blocked');
    expect(run.status(T0)).toMatchObject({ state: 'blocked', question: 'which file?' });
    run.apply('answer', run.validate('answer', { text: 'a.txt' }), T0 + 1);
    expect(run.state).toBe('running');
    expect(run.status(T0 + 1)).not.toHaveProperty('question');
    run.recordAnswer(ask, T0 + 2);
    expect(run.transcript.at(-1)).toEqual({ role: 'tool', toolCallId: 'ask-1', toolName: 'ask_user', content: 'a.txt', success: true });
  });

  it('leaves no question open once killed while blocked on it', () => {
    const run = newRun();
    run.ask('which colour?', T0);
    run.apply('kill', run.validate('kill', { reason: 'enough' }), T0 + 1);
    expect(run.status(T0 + 1)).toMatchObject({ state: 'killed', cause: 'enough' });
    expect(run.status(T0 + 1)).not.toHaveProperty('question');
  });

  it("keeps each step's own tokens with its reply in the transcript", () => {
    const run = newRun();
    const usage = { inputTokens: 7, outputTokens: 3, totalTokens: 10 };
    run.recordModelReply({ text: 'hi', toolCalls: [], usage, costUsd: 0, warnings: [] }, T0);
    run.recordModelReply({ text: 'again', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, costUsd: 0, warnings: [] }, T0);
    expect(run.transcript.filter((m) => m.role === 'assistant').map((m) => m.role === 'assistant' && m.usage?.totalTokens)).toEqual([10, 2]);
    expect(run.status(T0).usage.totalTokens).toBe(12);
  });

  it('suspends the deadline while blocked, as for every paused state', () => {
    const run = newRun();
    run.ask('?', T0 + 10_000);
    expect(run.limits.remainingMs(T0 + 1_000_000)).toBe(50_000);
  });
});

describe('the run state: what it reports', () => {
  it('shows its whole status: steps, limits, safety, cost, usage and activity', () => {
    const run = newRun({ limits: { maxSteps: 9, budgetUsd: 2 } });
    run.recordModelReply(reply(0.25, [call('c1')]), T0 + 1_000);
    run.noteToolStart('shell', T0 + 2_000);
    run.recordToolResult(call('c1'), failed, T0 + 3_000);
    expect(run.status(T0 + 3_000)).toEqual({
      runId: 'run-1',
      state: 'running',
      step: 1,
      maxSteps: 9,
      deadline: new Date(T0 + 60_000).toISOString(),
      asOf: new Date(T0 + 3_000).toISOString(),
      consecutiveErrors: 1,
      maxConsecutiveErrors: 5,
      emergencyStop: { active: false, reason: null, since: null },
      lastActivityAt: new Date(T0 + 3_000).toISOString(),
      lastTool: 'shell',
      costUsd: 0.25,
      budgetUsd: 2,
      warnings: [],
      model: 'scripted:x',
      goal: 'do it',
      startedAt: new Date(T0).toISOString(),
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      transcriptEpoch: 0,
      transcriptLength: 3,
    });
  });

  it('has a result only once it has ended, with its cause and usage', () => {
    const run = newRun();
    expect(() => run.result()).toThrow('result() before the run ended');
    run.recordModelReply(reply(0.1234567), T0);
    run.end({ status: 'timeout', cause: 'maxRuntime reached' }, T0 + 1);
    expect(run.result()).toEqual({
      runId: 'run-1',
      status: 'timeout',
      steps: 1,
      costUsd: 0.123457,
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      cause: 'maxRuntime reached',
    });
  });

  it('ends failed once it has used every step', () => {
    const run = newRun({ limits: { maxSteps: 1 } });
    expect(run.endIfOutOfSteps(T0)).toBe(false);
    run.recordModelReply(reply(), T0);
    expect(run.endIfOutOfSteps(T0)).toBe(true);
    expect(run.result()).toMatchObject({ status: 'failed', cause: 'maxSteps reached (1)' });
  });
});

describe('the run state: finishing', () => {
  it('completes at once without a verification gate', () => {
    const run = newRun();
    expect(run.requestFinish('all done', call('f'), T0)).toBeNull();
    expect(run.result()).toMatchObject({ status: 'completed', summary: 'all done' });
    expect(run.transcript.at(-1)).toMatchObject({ role: 'tool', content: 'Run finished.' });
  });

  it('runs the gate first; a failure goes back to the model without counting towards the emergency stop', () => {
    const run = newRun({ verify: { command: 'npm test', maxAttempts: 2 }, limits: { maxConsecutiveErrors: 1 } });
    const attempt = run.requestFinish('done?', call('f'), T0)!;
    run.recordVerification({ passed: false, attempts: attempt, exitCode: 1, output: 'boom' }, attempt, 'done?', call('f'), T0);
    expect(run.ended).toBe(false);
    expect(run.safety.errors).toBe(0);
    expect(run.transcript.at(-1)).toMatchObject({ role: 'tool', success: false, content: expect.stringContaining('attempt 1 of 2') });
  });

  it('ends needs_fix when the last attempt fails, and completes with the outcome when one passes', () => {
    const failing = newRun({ verify: { command: 'npm test', maxAttempts: 1 } });
    const outcome = { passed: false, attempts: 1, exitCode: 1, output: 'boom' };
    failing.recordVerification(outcome, failing.requestFinish('s', undefined, T0)!, 's', undefined, T0);
    expect(failing.result()).toMatchObject({ status: 'needs_fix', cause: 'verification failed once: npm test', verify: outcome });
    const passing = newRun({ verify: { command: 'npm test' } });
    const passed = { passed: true, attempts: 1, exitCode: 0, output: '' };
    passing.recordVerification(passed, passing.requestFinish('s', undefined, T0)!, 's', undefined, T0);
    expect(passing.result()).toMatchObject({ status: 'completed', summary: 's', verify: passed });
  });

  it('does not count an attempt whose worker died, and tells the model', () => {
    const run = newRun({ verify: { command: 'npm test', maxAttempts: 2 } });
    expect(run.requestFinish('s', undefined, T0)).toBe(1);
    run.recordVerificationLost('interrupted: the worker is gone', undefined, T0);
    expect(run.transcript.at(-1)).toMatchObject({ role: 'user', source: 'notice' });
    expect(run.requestFinish('s', undefined, T0)).toBe(1);
    expect(run.snapshot().verifyAttempts).toBe(1);
  });
});

describe('the run state: a step cut short', () => {
  it('does not count a verification that could not be run, tells the model why, and counts it as a failure', () => {
    const run = newRun({ verify: { command: 'npm test', maxAttempts: 2 }, limits: { maxConsecutiveErrors: 2 } });
    expect(run.requestFinish('s', call('f1'), T0)).toBe(1);
    expect(run.recordVerificationNotRun('the workspace /w is not a directory', call('f1'), T0).tripped).toBeNull();
    expect(run.transcript.at(-1)).toMatchObject({
      role: 'tool',
      toolCallId: 'f1',
      success: false,
      content: expect.stringContaining('verification could not be run: the workspace /w is not a directory'),
    });
    expect(run.snapshot().verifyAttempts).toBe(0);
    expect(run.requestFinish('s', undefined, T0)).toBe(1);
    expect(run.recordVerificationNotRun('the workspace /w is not a directory', undefined, T0).tripped).toMatch(/Maximum consecutive errors/);
    expect(run.state).toBe('emergency_stopped');
    expect(() => toModelPrompt(undefined, [...run.transcript])).not.toThrow();
  });

  it('answers every call of the last reply left without a result, so the next model call can be made', () => {
    const run = newRun();
    run.recordModelReply(reply(0, [call('a'), call('b'), call('c')]), T0);
    run.recordToolResult(call('a'), ok, T0);
    expect(() => toModelPrompt(undefined, [...run.transcript])).toThrow(/Tool results are missing for tool calls b, c/);
    run.answerOpenCalls('unexpected error: boom', T0);
    const results = run.transcript.filter((m) => m.role === 'tool');
    expect(results.map((m) => [m.toolCallId, m.success])).toEqual([
      ['a', true],
      ['b', false],
      ['c', false],
    ]);
    expect(results[2].content).toContain('unexpected error: boom');
    expect(run.safety.errors).toBe(0);
    expect(() => toModelPrompt(undefined, [...run.transcript])).not.toThrow();
    run.answerOpenCalls('again', T0);
    expect(run.transcript.filter((m) => m.role === 'tool')).toHaveLength(3);
  });
});

describe('the run state: loops, compaction and the critic', () => {
  it('steers a looping model once, then ends the run stuck', () => {
    const run = newRun();
    const same = { id: 's', name: 'shell', args: { command: 'ls' } };
    const outcomes = Array.from({ length: 8 }, () => run.recordToolResult(same, ok, T0));
    expect(outcomes[3]?.loop.action).toBe('steer');
    expect(run.takeSteers()[0]).toMatch(/You appear to be stuck in a loop/);
    expect(outcomes[7]?.loop.action).toBe('stop');
    expect(run.result()).toMatchObject({ status: 'stuck', pattern: expect.stringContaining('ls') });
  });

  it('compacts when the context is large, and after a failure waits three steps before trying again', () => {
    const run = newRun({ limits: { maxContextChars: 2_000 } });
    expect(run.compactionDue).toBe(false);
    run.addUserMessage('x'.repeat(2_001), 'notice');
    expect(run.compactionDue).toBe(true);
    run.recordCompactionFailed();
    expect(run.compactionDue).toBe(false);
    for (let i = 0; i < 3; i++) run.recordModelReply(reply(), T0);
    expect(run.compactionDue).toBe(true);
  });

  it('swaps in the compacted transcript, bumps its epoch and counts the summary', () => {
    const run = newRun();
    const plan = { head: [run.transcript[0]!], middle: [{ role: 'user' as const, content: 'old' }], tail: [] };
    run.recordCompaction(plan, { text: 'summary', costUsd: 0.01 }, T0);
    expect(run.transcriptEpoch).toBe(1);
    expect(run.transcript).toHaveLength(2);
    expect(run.costUsd).toBe(0.01);
  });

  it("counts the critic's cost once, even across continue-as-new", () => {
    const run = newRun();
    const report = (costUsd: number, decisions: string[]) => ({
      policy: 'llm',
      softTimeoutMs: 1_000,
      nextEscalationAt: null,
      decisions: decisions.map((decision) => ({ at: new Date(T0).toISOString(), decision })),
      costUsd,
    });
    expect(run.recordCriticReport(report(0.02, ['steer']), T0)).toEqual(['steer']);
    const next = new RunState('run-1', run.spec, T0, 0, JSON.parse(JSON.stringify(run.carryOver())));
    expect(next.recordCriticReport(report(0.03, ['steer', 'extend']), T0)).toEqual(['extend']);
    expect(next.costUsd).toBeCloseTo(0.03);
    expect(next.status(T0)).toMatchObject({ continuedAsNew: 1, critic: { policy: 'llm' } });
  });

  it('tells a sub-agent what the run has left', () => {
    const run = newRun({ limits: { maxSteps: 10, budgetUsd: 1 } });
    run.recordModelReply(reply(0.4), T0);
    expect(run.headroom(T0 + 20_000)).toEqual({ steps: 9, ms: 40_000, usd: 0.6 });
    expect(newRun().headroom(T0).usd).toBeUndefined();
  });
});

describe('a control message without a payload', () => {
  it('is refused, so a payload-less signal (which no encryption codec sees) cannot clear a stop', () => {
    const run = newRun();
    run.apply('emergencyStop', run.validate('emergencyStop', { reason: 'stop' }), T0);
    expect(() => run.validate('clearEmergency', undefined)).toThrow(/clearEmergency: a payload is required/);
    expect(() => run.validate('clearEmergency', null)).toThrow(/a payload is required/);
    expect(run.validate('clearEmergency', {})).toEqual({});
  });
});

describe('the run state: a steer that arrives as the model finishes', () => {
  const finishCall = { id: 'call_f', name: 'finish', args: { summary: 'done' } };

  it('holds the finish back for the model to read the steer first, without counting an error', () => {
    const run = newRun({ limits: { maxSteps: 5 } });
    run.recordModelReply(reply(0), T0);
    run.apply('steer', run.validate('steer', { message: 'do not finish yet' }), T0 + 500);
    expect(run.finishWaitsForSteers(finishCall, T0 + 1_000)).toBe(true);
    expect(run.ended).toBe(false);
    expect(run.status(T0 + 1_000).consecutiveErrors).toBe(0);
    expect(run.transcript.at(-1)).toMatchObject({
      role: 'tool',
      toolCallId: 'call_f',
      success: false,
      content: expect.stringContaining('an operator sent a message'),
    });
    expect(run.takeSteers()).toEqual(['do not finish yet']);
    expect(run.finishWaitsForSteers(finishCall, T0 + 2_000)).toBe(false);
  });

  it('lets the run finish on its last step, saying the steer went unread', () => {
    const run = newRun({ limits: { maxSteps: 1 } });
    run.recordModelReply(reply(0), T0);
    run.apply('steer', run.validate('steer', { message: 'too late' }), T0 + 500);
    expect(run.finishWaitsForSteers(finishCall, T0 + 1_000)).toBe(false);
    expect(run.warnings).toContain('1 steer(s) arrived as the run finished on its last step; the model did not read them');
  });
});
