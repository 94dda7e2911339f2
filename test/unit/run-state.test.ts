import { describe, expect, it } from 'vitest';
import { parseRunSpec } from '../../src/api/spec.js';
import { ControlRejected, RunState } from '../../src/run/run-state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function newRun(overrides: Record<string, unknown> = {}) {
  const spec = parseRunSpec({ goal: 'do it', model: 'scripted:x', ...overrides });
  return new RunState('run-1', spec, T0, T0 + 60_000);
}

const failed = { success: false, output: '', error: 'exit 1' };
const ok = { success: true, output: 'fine' };
const call = (id: string) => ({ id, name: 'shell', args: { command: 'x' } });

describe('the run state machine', () => {
  it('trips the emergency stop at the fifth consecutive failure and pauses the run', () => {
    const run = newRun();
    for (let i = 1; i <= 4; i++) expect(run.recordToolResult(call(`c${i}`), failed, 'x', T0 + i)).toBeNull();
    const reason = run.recordToolResult(call('c5'), failed, 'x', T0 + 5);
    expect(reason).toMatch(/Maximum consecutive errors reached \(5\)/);
    expect(run.state).toBe('emergency_stopped');
    expect(run.safety.emergencyState()).toEqual({ emergency_stop: true, consecutive_errors: 5, max_consecutive_errors: 5 });
    expect(run.status(T0 + 5).emergencyStop).toMatchObject({ active: true, since: new Date(T0 + 5).toISOString() });
  });

  it('resets the count on a successful tool and after a clear', () => {
    const run = newRun({ limits: { maxConsecutiveErrors: 3 } });
    run.recordToolResult(call('a'), failed, 'x', T0);
    run.recordToolResult(call('b'), failed, 'x', T0);
    run.recordToolResult(call('c'), ok, 'x', T0);
    expect(run.safety.errors).toBe(0);
    for (const id of ['d', 'e', 'f']) run.recordToolResult(call(id), failed, 'x', T0);
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
    run.recordToolResult(call('a'), failed, 'x', T0 + 10_000);
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
    run.recordToolResult(call('a'), failed, 'x', T0);
    run.apply('extend', { steps: 3 }, T0);
    const copy = new RunState('run-1', run.spec, T0 + 5, 0, JSON.parse(JSON.stringify(run.snapshot())));
    expect(copy.safety.errors).toBe(1);
    expect(copy.limits.steps).toBe(53);
    expect(copy.transcript).toEqual(run.transcript);
    expect(copy.status(T0 + 5).startedAt).toBe(new Date(T0).toISOString());
  });
});
