import { describe, expect, it } from 'vitest';
import { parseRunSpec } from '../../src/api/spec.js';
import { RunState } from '../../src/run/run-state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const held = { callId: 'call_child_1_0', tool: 'shell', args: { command: 'rm -rf build' }, requestedAt: new Date(T0).toISOString() };

function parent() {
  const run = new RunState('parent', parseRunSpec({ goal: 'do it', model: 'scripted:x', limits: { maxRuntime: '1m' } }), T0, T0 + 60_000);
  run.addChild('child');
  return run;
}

describe('a run whose sub-agent waits on a person', () => {
  it("shows the sub-agent's held call as its own, paused, with its deadline suspended", () => {
    const run = parent();
    run.noteSubAgentWait('child', { runId: 'child', pendingToolCall: held }, T0 + 1_000);
    expect(run.state).toBe('awaiting_tool_approval');
    expect(run.paused).toBe(true);
    expect(run.status(T0 + 1_000)).toMatchObject({ pendingToolCall: held, waitingSubAgent: 'child' });
    // Ten minutes of waiting do not count against the deadline.
    expect(run.limits.remainingMs(T0 + 600_000)).toBe(59_000);
    expect(run.personWait()).toEqual({ runId: 'child', pendingToolCall: held });
  });

  it('checks a decision against the held call, and passes a good one down to the run that waits', () => {
    const run = parent();
    run.noteSubAgentWait('child', { runId: 'grandchild', pendingToolCall: held }, T0);
    expect(() => run.validate('decideTool', { callId: 'call_old', decision: 'approve' })).toThrow(/stale callId "call_old"/);
    expect(() => run.validate('decideTool', { callId: held.callId, decision: 'edit', args: { nope: 1 } })).toThrow(/edited args rejected/);
    const payload = run.validate('decideTool', { callId: held.callId, decision: 'deny', reason: 'no', audit: { by: 'ana', via: 'cli' } });
    expect(run.apply('decideTool', payload, T0 + 5)).toBe(`passed down to sub-agent grandchild: tool call ${held.callId}: deny (no)`);
    expect(run.takePassedDown()).toEqual({ runId: 'grandchild', name: 'decideTool', payload });
    expect(run.takePassedDown()).toBeNull();
    expect(run.state).toBe('running');
    expect(run.status(T0 + 5).audit).toEqual([expect.objectContaining({ action: 'decideTool', by: 'ana' })]);
  });

  it("shows a sub-agent's question and passes the answer down; refuses an answer when nobody asked", () => {
    const run = parent();
    expect(() => run.validate('answer', { text: 'teal' })).toThrow(/not waiting for an answer/);
    run.noteSubAgentWait('child', { runId: 'child', question: 'which colour?' }, T0);
    expect(run.status(T0)).toMatchObject({ state: 'blocked', question: 'which colour?', waitingSubAgent: 'child' });
    run.apply('answer', run.validate('answer', { text: 'teal' }), T0 + 1);
    expect(run.takePassedDown()).toMatchObject({ runId: 'child', name: 'answer', payload: { text: 'teal' } });
  });

  it('stops showing the wait when the sub-agent says so, or its call returns; another child cannot clear it', () => {
    const run = parent();
    run.noteSubAgentWait('child', { runId: 'child', pendingToolCall: held }, T0);
    run.noteSubAgentWait('other', null, T0 + 1);
    expect(run.state).toBe('awaiting_tool_approval');
    run.noteSubAgentWait('child', null, T0 + 2);
    expect(run.state).toBe('running');
    expect(run.status(T0 + 2).waitingSubAgent).toBeUndefined();
    run.noteSubAgentWait('child', { runId: 'child', pendingToolCall: held }, T0 + 3);
    run.forgetSubAgentWait('child', T0 + 4);
    expect(run.state).toBe('running');
    expect(run.personWait()).toBeNull();
  });

  it('keeps an emergency stop above the wait, and shows nothing once ended', () => {
    const run = parent();
    run.noteSubAgentWait('child', { runId: 'child', pendingToolCall: held }, T0);
    run.apply('emergencyStop', run.validate('emergencyStop', { reason: 'look' }), T0 + 1);
    expect(run.state).toBe('emergency_stopped');
    expect(run.personWait()).toBeNull();
    run.apply('kill', run.validate('kill', { reason: 'done' }), T0 + 2);
    expect(run.status(T0 + 2)).not.toHaveProperty('pendingToolCall');
    expect(run.status(T0 + 2)).not.toHaveProperty('waitingSubAgent');
  });
});
