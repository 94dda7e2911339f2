import { describe, expect, it } from 'vitest';
import { describeControl, describeStep } from '../../src/cli/history-view.js';
import type { HistoryControl, HistoryStep } from '../../src/history/steps.js';

const model = (over: Partial<HistoryStep>): HistoryStep =>
  ({
    kind: 'model',
    step: 3,
    execution: 0,
    startedAt: '2026-01-01T00:00:00.000Z',
    endedAt: '2026-01-01T00:00:01.000Z',
    durationMs: 1_000,
    attempts: 1,
    errors: [],
    outcome: 'completed',
    model: 'openai:x',
    text: '',
    toolCalls: ['shell'],
    inputTokens: 10,
    outputTokens: 2,
    costUsd: 0.001,
    ...over,
  }) as HistoryStep;

describe('a step of tether history, in a line', () => {
  it('says why a model call failed, so it does not read as one that cost nothing', () => {
    const failed = describeStep(
      model({ outcome: 'failed', toolCalls: [], inputTokens: 0, outputTokens: 0, costUsd: 0, errors: ['CircuitOpen: ollama open for 30 s more: 429'] }),
    );
    expect(failed).toBe('model openai:x: 0 in / 0 out tokens, $0.0000 → FAILED: CircuitOpen: ollama open for 30 s more: 429');
    const retried = describeStep(model({ outcome: 'failed', toolCalls: [], attempts: 2, errors: ['server (HTTP 503): down', 'CircuitOpen: openai open'] }));
    expect(retried).toMatch(/\(2 attempts; server \(HTTP 503\): down\) → FAILED: CircuitOpen: openai open$/);
  });

  it('quotes the question of an ask_user call, which the run waits on', () => {
    expect(describeStep(model({ toolCalls: ['ask_user'], question: 'Which colour, red or blue?' }))).toBe(
      'model openai:x: 10 in / 2 out tokens, $0.0010 → ask_user "Which colour, red or blue?"',
    );
  });

  it('adds nothing to a call that answered', () => {
    expect(describeStep(model({}))).toBe('model openai:x: 10 in / 2 out tokens, $0.0010 → shell');
  });
});

describe('a control message of tether history, in a line', () => {
  const control = (over: Partial<HistoryControl>): HistoryControl =>
    ({ at: '2026-01-01T00:00:02.000Z', execution: 0, via: 'signal', identity: null, error: null, ...over }) as HistoryControl;

  it("reads the critic's report as what it watches and decided, not as its JSON", () => {
    const report = {
      policy: 'extend-once',
      softTimeoutMs: 120_000,
      nextEscalationAt: '2026-01-01T00:02:02.000Z',
      decisions: [{ at: 'x', decision: 'extend by 2m' }],
    };
    expect(describeControl(control({ name: 'criticReport', identity: 'history-service', payload: report }))).toBe(
      'critic (extend-once), next check 00:02:02; last decision: extend by 2m',
    );
    expect(describeControl(control({ name: 'criticReport', payload: { ...report, nextEscalationAt: null, decisions: [] } }))).toBe(
      'critic (extend-once), no check due',
    );
  });

  it('shows a control message with its sender and payload, and why it was refused', () => {
    expect(describeControl(control({ name: 'steer', via: 'update', identity: 'cli', payload: { message: 'hi' }, error: 'refused' }))).toBe(
      'steer (update by cli) {"message":"hi"} → refused: refused',
    );
  });
});
