import { describe, expect, it } from 'vitest';
import { Safety } from '../../src/run/safety.js';

const NOW = '2026-01-01T00:00:00.000Z';

describe('the safety system', () => {
  it('trips at the threshold of consecutive failures, with the count and the last error as the reason', () => {
    const safety = new Safety(3);
    expect(safety.recordFailure('first', NOW)).toBeNull();
    expect(safety.recordFailure('second', NOW)).toBeNull();
    expect(safety.recordFailure('third failure\nwith a stack', NOW)).toBe('Maximum consecutive errors reached (3); last error: third failure');
    expect(safety.status()).toEqual({ active: true, reason: 'Maximum consecutive errors reached (3); last error: third failure', since: NOW });
  });

  it('starts counting again after a success', () => {
    const safety = new Safety(2);
    safety.recordFailure('a', NOW);
    safety.recordSuccess();
    expect(safety.errors).toBe(0);
    expect(safety.recordFailure('b', NOW)).toBeNull();
    expect(safety.active).toBe(false);
  });

  it('keeps counting while stopped but trips only once, keeping the first reason', () => {
    const safety = new Safety(1);
    const reason = safety.recordFailure('boom', NOW);
    expect(safety.recordFailure('again', '2026-01-02T00:00:00.000Z')).toBeNull();
    expect(safety.errors).toBe(2);
    expect(safety.status().reason).toBe(reason);
    expect(safety.trip('by hand', NOW)).toBe(false);
  });

  it('clears the stop and the count together, and refuses to clear a stop that is not active', () => {
    const safety = new Safety(5);
    expect(() => safety.clear()).toThrow('Emergency stop is not active');
    safety.recordFailure('x', NOW);
    safety.trip('by hand', NOW);
    safety.clear();
    expect(safety.emergencyState()).toEqual({ emergency_stop: false, consecutive_errors: 0, max_consecutive_errors: 5 });
  });

  it('cuts a long error line to 200 characters in the reason', () => {
    const safety = new Safety(1);
    expect(safety.recordFailure('x'.repeat(500), NOW)).toBe(`Maximum consecutive errors reached (1); last error: ${'x'.repeat(200)}…`);
  });

  it('keeps its count, threshold and stop across a snapshot, whatever the new threshold', () => {
    const safety = new Safety(2);
    safety.recordFailure('a', NOW);
    const restored = new Safety(10, JSON.parse(JSON.stringify(safety.snapshot())));
    expect(restored.emergencyState()).toEqual({ emergency_stop: false, consecutive_errors: 1, max_consecutive_errors: 2 });
    expect(restored.recordFailure('b', NOW)).toMatch(/reached \(2\)/);
  });
});
