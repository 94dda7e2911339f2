import { describe, expect, it } from 'vitest';
import { parseRunSpec } from '../../src/api/spec.js';
import { stoppedSubAgentResult, subAgentId, subAgentResult, subAgentSpec } from '../../src/run/sub-agent.js';

const parent = parseRunSpec({
  goal: 'parent',
  model: 'scripted:parent',
  fallbackModels: ['scripted:backup'],
  tools: ['shell', 'read_file', 'delegate'],
  workspace: '/tmp/ws',
  limits: { maxSteps: 40, budgetUsd: 1 },
});

describe('sub-agents', () => {
  it('get no more steps, time or money than the parent has left', () => {
    const spec = subAgentSpec(parent, { goal: 'sub' }, { steps: 7, ms: 90_000, usd: 0.25 });
    expect(spec.limits).toMatchObject({ maxSteps: 7, maxRuntime: 90_000, budgetUsd: 0.25 });
  });

  it('get at least one step, one second and a sliver of budget, so they start and end cleanly', () => {
    const spec = subAgentSpec(parent, { goal: 'sub' }, { steps: -3, ms: 10, usd: -0.5 });
    expect(spec.limits).toMatchObject({ maxSteps: 1, maxRuntime: 1_000, budgetUsd: 0.000001 });
  });

  it('are held at the parent’s approval gates, except in runs recorded before sub-agents kept them', () => {
    const gated = parseRunSpec({ goal: 'p', model: 'scripted:p', tools: ['shell', 'delegate'], approvals: [{ tool: 'shell' }] });
    const left = { steps: 5, ms: 60_000, usd: undefined };
    expect(subAgentSpec(gated, { goal: 'sub' }, left).approvals).toEqual(gated.approvals);
    expect(subAgentSpec(gated, { goal: 'sub' }, left, { keepApprovals: false })).not.toHaveProperty('approvals');
    expect(subAgentSpec(parent, { goal: 'sub' }, left)).not.toHaveProperty('approvals');
  });

  it('never exceed the parent step ceiling, and have no budget when the parent has none', () => {
    const unbounded = parseRunSpec({ goal: 'p', model: 'scripted:p', limits: { maxSteps: 5 } });
    const spec = subAgentSpec(unbounded, { goal: 'sub' }, { steps: 100, ms: 60_000, usd: undefined });
    expect(spec.limits?.maxSteps).toBe(5);
    expect(spec.limits).not.toHaveProperty('budgetUsd');
  });

  it("inherit the parent's model, fallbacks and workspace, and only tools the parent may use", () => {
    const spec = subAgentSpec(parent, { goal: 'sub', tools: ['shell', 'write_file'] }, { steps: 5, ms: 60_000, usd: 1 });
    expect(spec).toMatchObject({ goal: 'sub', model: 'scripted:parent', fallbackModels: ['scripted:backup'], tools: ['shell'], workspace: '/tmp/ws' });
    expect(subAgentSpec(parent, { goal: 'sub', model: 'scripted:other' }, { steps: 5, ms: 60_000, usd: 1 }).model).toBe('scripted:other');
  });

  it('have ids made of the parent, the step and the call, readable and stable on replay', () => {
    expect(subAgentId('run-1', 3, 'call_run-1_3_0', 0)).toBe('run-1.delegate-3-ll_run-1_3_0');
    expect(subAgentId('run-1', 3, '!!!', 2)).toBe('run-1.delegate-3-2');
  });

  it('report their outcome to the parent as a tool result', () => {
    const result = { runId: 'c', steps: 2, costUsd: 0, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } };
    expect(subAgentResult('c', { ...result, status: 'completed', summary: 'did it' })).toEqual({
      success: true,
      output: 'sub-agent c completed after 2 steps: did it',
    });
    expect(subAgentResult('c', { ...result, status: 'failed', cause: 'maxSteps reached (2)' })).toEqual({
      success: false,
      error: 'sub-agent ended failed: maxSteps reached (2)',
      output: 'sub-agent c failed after 2 steps',
    });
    expect(stoppedSubAgentResult({ childId: 'c', reason: 'too many errors', costUsd: 0 })).toEqual({
      success: false,
      error: 'emergency_stop',
      output:
        'sub-agent c is emergency-stopped (too many errors). It stays stopped, and ends when this run ends, unless an operator clears it before then; its work so far is in the workspace',
    });
  });
});
