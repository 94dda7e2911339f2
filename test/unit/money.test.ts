import { describe, expect, it } from 'vitest';
import { plainUsd } from '../../src/api/money.js';
import { parseRunSpec } from '../../src/api/spec.js';
import { RunState } from '../../src/run/run-state.js';

describe('dollars as a status says them', () => {
  it('never in exponent form', () => {
    expect(plainUsd(0.5)).toBe('0.5');
    expect(plainUsd(1.25)).toBe('1.25');
    expect(plainUsd(1e-7)).toBe('0.0000001');
    expect(plainUsd(2.5e-9)).toBe('0.0000000025');
    expect(plainUsd(0)).toBe('0');
  });

  it('in the warnings and the audit of a run with a tiny budget', () => {
    const T0 = Date.parse('2026-01-01T00:00:00Z');
    const run = new RunState('r', parseRunSpec({ goal: 'g', model: 'scripted:x', limits: { budgetUsd: 0.000001 } }), T0, T0 + 60_000);
    run.recordModelReply(
      { text: '', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, costUsd: 0.003, warnings: [], breakers: [] } as never,
      T0,
    );
    run.apply('approve', run.validate('approve', { addBudgetUsd: 0.0000001 }), T0 + 1_000);
    const text = [...run.status(T0 + 1_000).warnings, ...(run.status(T0 + 1_000).audit ?? []).map((a) => a.detail ?? '')].join(' ');
    expect(text).not.toMatch(/\de-\d/);
    expect(text).toContain('budget raised by $0.0000001 to $0.000001,');
    expect(text).toContain('+$0.0000001');
  });
});
