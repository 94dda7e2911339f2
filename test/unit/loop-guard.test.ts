import { describe, expect, it } from 'vitest';
import { LoopGuard } from '../../src/run/loop-guard.js';

const call = { id: 'c', name: 'shell', args: { command: 'echo same' } };
const ok = { success: true, output: 'same' };

function observe(guard: LoopGuard, times: number) {
  return Array.from({ length: times }, () => guard.observe(call, ok));
}

describe('the loop guard', () => {
  it('shows the model its loop once, with the pattern, at the first detection', () => {
    const responses = observe(new LoopGuard(), 4);
    expect(responses.slice(0, 3).map((r) => r.action)).toEqual(['none', 'none', 'none']);
    expect(responses[3]).toMatchObject({ action: 'steer', kind: 'repeat', message: expect.stringContaining('You appear to be stuck in a loop') });
  });

  it('gives the model a fresh window after the steer, then stops the run at the second detection', () => {
    const guard = new LoopGuard();
    observe(guard, 4);
    const after = observe(guard, 4);
    expect(after.slice(0, 3).map((r) => r.action)).toEqual(['none', 'none', 'none']);
    expect(after[3]).toMatchObject({
      action: 'stop',
      kind: 'repeat',
      cause: 'stuck in a loop (repeat) after a diagnostic steer',
      pattern: expect.stringContaining('echo same'),
    });
  });

  it('remembers across continue-as-new that it already steered', () => {
    const guard = new LoopGuard();
    observe(guard, 4);
    const restored = new LoopGuard(JSON.parse(JSON.stringify(guard.snapshot())));
    expect(observe(restored, 4)[3]?.action).toBe('stop');
  });

  it('starts afresh when a person clears a stop: the calls before it neither end the run nor count toward its next loop', () => {
    const guard = new LoopGuard();
    observe(guard, 4);
    observe(guard, 3);
    guard.forget();
    const after = observe(guard, 4);
    expect(after.slice(0, 3).map((r) => r.action)).toEqual(['none', 'none', 'none']);
    expect(after[3]?.action).toBe('steer');
  });
});
