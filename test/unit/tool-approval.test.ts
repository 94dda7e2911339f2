import { describe, expect, it } from 'vitest';
import { parseRunSpec } from '../../src/api/spec.js';
import { decisionFromFlags } from '../../src/cli/commands/decide.js';
import { CriticWatch } from '../../src/run/critic-watch.js';
import { RunState } from '../../src/run/run-state.js';
import { ApprovalGate, decide, decisionProblem, needsApproval } from '../../src/run/tool-approval.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const shell = (id: string, command: string) => ({ id, name: 'shell', args: { command } });

function gatedRun(approvals: unknown = [{ tool: 'shell', match: 'rm\\s+-rf' }]) {
  return new RunState('run-1', parseRunSpec({ goal: 'g', model: 'scripted:x', approvals, limits: { maxRuntime: '60s' } }), T0, T0 + 60_000);
}

describe('which calls need a person', () => {
  it('gates every call of a tool named without match', () => {
    expect(needsApproval(shell('c', 'ls'), [{ tool: 'shell' }])).toBe(true);
    expect(needsApproval({ id: 'c', name: 'read_file', args: { path: 'a' } }, [{ tool: 'shell' }])).toBe(false);
  });

  it('gates only the calls whose JSON arguments match the regex', () => {
    const rules = [{ tool: 'shell' as const, match: 'rm\\s+-rf' }];
    expect(needsApproval(shell('c', 'rm -rf build'), rules)).toBe(true);
    expect(needsApproval(shell('c', 'ls -l'), rules)).toBe(false);
    // The regex sees the JSON text, so it can anchor on a field's name.
    expect(needsApproval({ id: 'c', name: 'write_file', args: { path: '.env', content: 'x' } }, [{ tool: 'write_file', match: '"path":"\\.env"' }])).toBe(true);
  });

  it('reads a pattern as Unicode when it compiles so, and as a plain one when it compiles only so', () => {
    const cyrillic = [{ tool: 'shell' as const, match: '\\p{Script=Cyrillic}' }];
    expect(needsApproval(shell('c', 'echo привет'), cyrillic)).toBe(true);
    expect(needsApproval(shell('c', 'echo hello'), cyrillic)).toBe(false);
    // Runs recorded before read it without the flag: the literal text `p{Script=Cyrillic}`.
    expect(needsApproval(shell('c', 'echo привет'), cyrillic, false)).toBe(false);
    // `\-` is no escape under the `u` flag: such a pattern keeps its old meaning.
    expect(needsApproval(shell('c', 'rm -rf x'), [{ tool: 'shell', match: 'rm \\-rf' }])).toBe(true);
  });

  it('refuses a RunSpec whose match is not a regular expression, saying which rule and why', () => {
    expect(() => parseRunSpec({ goal: 'g', model: 'scripted:x', approvals: [{ tool: 'shell', match: 'rm (' }] })).toThrow(
      /approvals\.0\.match: match is not a valid regular expression: .*Unterminated group/,
    );
    expect(() => parseRunSpec({ goal: 'g', model: 'scripted:x', approvals: [{ tool: 'rm' }] })).toThrow(/approvals\.0\.tool: tool "rm" is not one of shell/);
  });

  it('defaults to no gates, so existing RunSpecs behave as before', () => {
    expect(parseRunSpec({ goal: 'g', model: 'scripted:x' }).approvals).toEqual([]);
  });
});

describe('decisions', () => {
  const pending = { callId: 'c2', tool: 'shell', args: { command: 'rm -rf /' }, requestedAt: new Date(T0).toISOString() };

  it('calls a decision for another call stale, and one with nothing waiting stale too', () => {
    expect(decisionProblem(pending, { callId: 'c1', decision: 'approve' })).toBe('stale callId "c1": the call waiting for approval is "c2" (shell)');
    expect(decisionProblem(null, { callId: 'c1', decision: 'approve' })).toMatch(/no tool call is waiting for approval/);
    expect(decisionProblem(pending, { callId: 'c2', decision: 'deny', reason: 'no' })).toBeNull();
  });

  it('checks edited arguments against the tool schema', () => {
    expect(decisionProblem(pending, { callId: 'c2', decision: 'edit', args: { cmd: 'ls' } })).toMatch(/edited args rejected: shell: .*command/);
    expect(decisionProblem(pending, { callId: 'c2', decision: 'edit', args: { command: 'ls' } })).toBeNull();
  });

  it('runs an approved call unchanged, an edited one with the new arguments, and turns a denial into a result with the reason', () => {
    const call = shell('c2', 'rm -rf /');
    expect(decide(call, { callId: 'c2', decision: 'approve' })).toMatchObject({ kind: 'run', call, edited: false });
    expect(decide(call, { callId: 'c2', decision: 'edit', args: { command: 'rm -rf ./build' } })).toMatchObject({
      kind: 'run',
      call: { id: 'c2', args: { command: 'rm -rf ./build' } },
      invocation: { name: 'shell', args: { command: 'rm -rf ./build' } },
      edited: true,
    });
    const denied = decide(call, { callId: 'c2', decision: 'deny', reason: 'never the root' });
    expect(denied).toMatchObject({ kind: 'denied', result: { success: false } });
    expect(denied.kind === 'denied' && denied.result.error).toContain('never the root');
  });

  it('tells the model, in the result of an edited call, that it was edited and with what', () => {
    const gate = new ApprovalGate([{ tool: 'shell' }]);
    const call = shell('c2', 'rm -rf /');
    gate.hold(call, T0);
    gate.record({ callId: 'c2', decision: 'edit', args: { command: 'ls' }, reason: 'look first' });
    expect(gate.take(call)).toMatchObject({ kind: 'run', edited: true });
    const result = gate.annotate('c2', { success: true, output: 'a.txt' });
    expect(result.output).toBe('Note: a person edited the arguments of this call before it ran (look first); it ran with {"command":"ls"}\na.txt');
    // Only once, and only for that call.
    expect(gate.annotate('c2', { success: true, output: 'x' }).output).toBe('x');
  });

  it('validates the payload: edit needs args, args go only with edit, decision is one of three', () => {
    const run = gatedRun();
    expect(() => run.validate('decideTool', { callId: 'c', decision: 'edit' })).toThrow(/"edit" needs "args"/);
    expect(() => run.validate('decideTool', { callId: 'c', decision: 'approve', args: {} })).toThrow(/"args" goes only with decision "edit"/);
    expect(() => run.validate('decideTool', { callId: 'c', decision: 'maybe' })).toThrow(/decision must be "approve", "deny" or "edit"/);
  });
});

describe('the run while a call waits', () => {
  it('pauses as awaiting_tool_approval with the deadline suspended, and shows the call in status', () => {
    const run = gatedRun();
    const call = shell('c1', 'rm -rf build');
    expect(run.needsApproval(call, true)).toBe(true);
    run.holdForApproval(call, T0 + 1_000);
    expect(run.state).toBe('awaiting_tool_approval');
    expect(run.paused).toBe(true);
    expect(run.status(T0 + 1_000).pendingToolCall).toEqual({
      callId: 'c1',
      tool: 'shell',
      args: { command: 'rm -rf build' },
      requestedAt: new Date(T0 + 1_000).toISOString(),
    });
    // An hour waiting for a person costs the run none of its runtime.
    expect(run.limits.remainingMs(T0 + 3_600_000)).toBe(59_000);
    run.apply('decideTool', run.validate('decideTool', { callId: 'c1', decision: 'approve' }), T0 + 3_600_000);
    expect(run.state).toBe('running');
    expect(run.status(T0 + 3_600_000).pendingToolCall).toBeUndefined();
    expect(run.limits.remainingMs(T0 + 3_600_000)).toBe(59_000);
    expect(run.takeToolDecision(call)).toMatchObject({ kind: 'run', edited: false });
  });

  it('refuses a second decision for a call already decided', () => {
    const run = gatedRun();
    run.holdForApproval(shell('c1', 'rm -rf a'), T0);
    run.apply('decideTool', run.validate('decideTool', { callId: 'c1', decision: 'deny', reason: 'no' }), T0);
    expect(() => run.validate('decideTool', { callId: 'c1', decision: 'approve' })).toThrow(/decideTool: no tool call is waiting for approval \(callId "c1"/);
  });

  it('ends timeout when nobody decides within maxPause', () => {
    const run = gatedRun();
    run.holdForApproval(shell('c1', 'rm -rf a'), T0);
    run.abandonPause(T0 + 1);
    expect(run.result()).toMatchObject({ status: 'timeout', cause: 'paused (awaiting_tool_approval) longer than maxPause with nobody acting' });
  });

  it('records a denial as a result the model reads, not counted as an error', () => {
    const run = gatedRun();
    const call = shell('c1', 'rm -rf a');
    run.holdForApproval(call, T0);
    run.apply('decideTool', run.validate('decideTool', { callId: 'c1', decision: 'deny', reason: 'not today' }), T0);
    const outcome = run.takeToolDecision(call);
    if (outcome.kind !== 'denied') throw new Error('expected a denial');
    run.recordToolResult(call, outcome.result, T0, false);
    expect(run.transcript.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'c1', success: false });
    expect((run.transcript.at(-1) as { content: string }).content).toContain('not today');
    expect(run.safety.errors).toBe(0);
  });
});

describe('the critic', () => {
  it('never approves: whatever its policy decides, it sends only steer, extend or kill', () => {
    const decisions = [
      {},
      { nudge: 'go on' },
      { extendBy: 60_000 },
      { raiseStepsBy: 5 },
      { kill: true },
      { nudge: 'x', extendBy: 1, raiseStepsBy: 1, kill: true },
    ];
    for (const decision of decisions) {
      const watch = new CriticWatch(1_000, T0);
      for (const signal of watch.apply(decision, T0 + 5_000)) expect(['steer', 'extend', 'kill']).toContain(signal.name);
    }
  });
});

describe('tether decide flags', () => {
  it('turns exactly one of --approve, --deny --reason, --edit into a decision', () => {
    expect(decisionFromFlags({ approve: true })).toEqual({ decision: 'approve' });
    expect(decisionFromFlags({ deny: true, reason: 'too risky' })).toEqual({ decision: 'deny', reason: 'too risky' });
    expect(decisionFromFlags({ edit: '{"command":"ls"}' })).toEqual({ decision: 'edit', args: { command: 'ls' } });
  });

  it('refuses no choice, two choices, a denial without a reason and arguments that are not a JSON object', () => {
    expect(() => decisionFromFlags({})).toThrow(/exactly one of --approve, --deny, --edit/);
    expect(() => decisionFromFlags({ approve: true, deny: true, reason: 'x' })).toThrow(/got --approve, --deny/);
    expect(() => decisionFromFlags({ deny: true })).toThrow(/--deny needs --reason/);
    expect(() => decisionFromFlags({ edit: '{nope' })).toThrow(/--edit takes the call's arguments as a JSON object/);
    expect(() => decisionFromFlags({ edit: '["ls"]' })).toThrow(/JSON object/);
  });
});
