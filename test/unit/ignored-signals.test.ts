import { describe, expect, it } from 'vitest';
import { ESTOP_ALREADY_ACTIVE, ESTOP_NOT_ACTIVE } from '../../src/api/control.js';
import { IGNORED_SIGNALS_KEPT, ignoredSignalWarning, withIgnoredSignal, worthAWarning } from '../../src/run/ignored-signals.js';
import { RunState } from '../../src/run/run-state.js';
import { parseRunSpec } from '../../src/api/spec.js';

const at = Date.parse('2026-11-27T12:00:00Z');

describe('ignored signals in a run’s warnings', () => {
  it('names the message, when and why', () => {
    expect(ignoredSignalWarning('decideTool', 'decideTool: stale callId "c1"', at)).toBe(
      'ignored decideTool signal at 2026-11-27T12:00:00.000Z: decideTool: stale callId "c1"',
    );
  });

  it('cuts a long reason', () => {
    const warning = ignoredSignalWarning('steer', 'x'.repeat(5000), at);
    expect(warning.length).toBeLessThan(400);
    expect(warning.endsWith('…')).toBe(true);
  });

  it('keeps only the latest refusals, and every other warning', () => {
    let warnings = ['budget: 75 % of $1.00 spent'];
    for (let i = 0; i < IGNORED_SIGNALS_KEPT + 3; i++) warnings = withIgnoredSignal(warnings, ignoredSignalWarning('steer', `bad ${i}`, at + i));
    expect(warnings[0]).toBe('budget: 75 % of $1.00 spent');
    expect(warnings.slice(1).map((w) => w.split(': ').at(-1))).toEqual(['bad 3', 'bad 4', 'bad 5', 'bad 6', 'bad 7']);
  });

  it('says nothing of a stop or a clear that found the run as asked', () => {
    expect(worthAWarning(ESTOP_ALREADY_ACTIVE)).toBe(false);
    expect(worthAWarning(ESTOP_NOT_ACTIVE)).toBe(false);
    expect(worthAWarning('answer: the run is not waiting for an answer')).toBe(true);
  });

  it('shows in the run’s status', () => {
    const run = new RunState('r1', parseRunSpec({ goal: 'g', model: 'scripted:x' }), at, at + 60_000);
    run.noteIgnoredSignal('answer', 'answer: the run is not waiting for an answer', at);
    run.noteIgnoredSignal('clearEmergency', ESTOP_NOT_ACTIVE, at);
    expect(run.status(at).warnings).toEqual(['ignored answer signal at 2026-11-27T12:00:00.000Z: answer: the run is not waiting for an answer']);
  });
});
