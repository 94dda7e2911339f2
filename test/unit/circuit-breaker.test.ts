import { describe, expect, it } from 'vitest';
import { BreakerRegistry, CircuitBreaker, type BreakerState } from '../../src/llm/circuit-breaker.js';

/** A breaker on a hand-wound clock, and a log of its state changes. */
function breakerAt(start = 1_000_000) {
  let now = start;
  const changes: string[] = [];
  const breaker = new CircuitBreaker({ now: () => now, onStateChange: (from, to) => changes.push(`${from}->${to}`) });
  return { breaker, changes, advance: (ms: number) => (now += ms), now: () => now };
}

function failTimes(breaker: CircuitBreaker, n: number): void {
  for (let i = 0; i < n; i++) breaker.onFailure();
}

/** Opens a fresh breaker and waits out its first window, leaving it half-open. */
function halfOpen() {
  const b = breakerAt();
  b.breaker.trip();
  b.advance(10_000);
  expect(b.breaker.allow()).toBe(true);
  return b;
}

describe('a circuit breaker', () => {
  it('starts closed and lets calls through', () => {
    const { breaker } = breakerAt();
    expect(breaker.state).toBe('closed');
    expect(breaker.allow()).toBe(true);
    expect(breaker.retryInMs()).toBe(0);
    expect(breaker.openUntil()).toBeNull();
  });

  it('stays closed after four consecutive failures and opens at exactly the fifth', () => {
    const { breaker, changes } = breakerAt();
    failTimes(breaker, 4);
    expect(breaker.state).toBe('closed');
    breaker.onFailure();
    expect(breaker.state).toBe('open');
    expect(changes).toEqual(['closed->open']);
  });

  it('counts only consecutive failures: a success starts the count again', () => {
    const { breaker } = breakerAt();
    failTimes(breaker, 4);
    breaker.onSuccess();
    failTimes(breaker, 4);
    expect(breaker.state).toBe('closed');
  });

  it('fails fast for 10 s once open, then lets a probe through half-open', () => {
    const { breaker, advance, now } = breakerAt();
    failTimes(breaker, 5);
    expect(breaker.openUntil()).toBe(now() + 10_000);
    expect(breaker.allow()).toBe(false);
    expect(breaker.retryInMs()).toBe(10_000);
    advance(9_999);
    expect(breaker.allow()).toBe(false);
    expect(breaker.retryInMs()).toBe(1);
    advance(1);
    expect(breaker.retryInMs()).toBe(0);
    expect(breaker.allow()).toBe(true);
    expect(breaker.state).toBe('half_open');
    expect(breaker.openUntil()).toBeNull();
  });

  it('holds calls back for as long as the provider asked, without doubling its own window, and never shortens a longer hold', () => {
    const b = breakerAt();
    b.breaker.holdFor(60_000);
    expect(b.breaker.allow()).toBe(false);
    expect(b.breaker.retryInMs()).toBe(60_000);
    b.breaker.holdFor(5_000);
    expect(b.breaker.retryInMs()).toBe(60_000);
    b.advance(60_000);
    expect(b.breaker.allow()).toBe(true);
    expect(b.breaker.snapshot().backoffMs).toBe(10_000);
    expect(b.changes).toEqual(['closed->open', 'open->half_open']);
  });

  it('ignores late results of calls that left before it opened', () => {
    const { breaker, now } = breakerAt();
    failTimes(breaker, 5);
    const until = breaker.openUntil();
    breaker.onFailure();
    breaker.onSuccess();
    expect(breaker.state).toBe('open');
    expect(breaker.openUntil()).toBe(until);
    expect(until).toBe(now() + 10_000);
  });

  it('reopens on a failed probe with the window doubled to 20 s', () => {
    const { breaker, changes } = halfOpen();
    breaker.onFailure();
    expect(breaker.state).toBe('open');
    expect(breaker.retryInMs()).toBe(20_000);
    expect(changes).toEqual(['closed->open', 'open->half_open', 'half_open->open']);
  });

  it('doubles the window on each failed probe up to a cap of 120 s', () => {
    const { breaker, advance } = halfOpen();
    const windows: number[] = [];
    for (let i = 0; i < 6; i++) {
      breaker.onFailure();
      windows.push(breaker.retryInMs());
      advance(breaker.retryInMs());
      expect(breaker.allow()).toBe(true);
    }
    expect(windows).toEqual([20_000, 40_000, 80_000, 120_000, 120_000, 120_000]);
  });

  it('starts again from 10 s when a failure comes long after it went half-open, not from the doubled window of an old outage', () => {
    const { breaker, advance } = halfOpen();
    for (const window of [20_000, 40_000, 80_000]) {
      breaker.onFailure();
      expect(breaker.retryInMs()).toBe(window);
      advance(window);
      expect(breaker.allow()).toBe(true);
    }
    // One probe answered; the calls then stop for an hour, with the breaker still half-open.
    breaker.onSuccess();
    advance(3_600_000);
    breaker.onFailure();
    expect(breaker.state).toBe('open');
    expect(breaker.retryInMs()).toBe(10_000);
  });

  it('needs two consecutive successes in half-open to close', () => {
    const { breaker, changes } = halfOpen();
    breaker.onSuccess();
    expect(breaker.state).toBe('half_open');
    breaker.onSuccess();
    expect(breaker.state).toBe('closed');
    expect(changes.at(-1)).toBe('half_open->closed');
  });

  it('reopens when a probe fails after one success', () => {
    const { breaker } = halfOpen();
    breaker.onSuccess();
    breaker.onFailure();
    expect(breaker.state).toBe('open');
    expect(breaker.retryInMs()).toBe(20_000);
  });

  it('resets its window to 10 s and its failure count once closed again', () => {
    const { breaker, advance } = halfOpen();
    breaker.onFailure();
    advance(20_000);
    breaker.allow();
    breaker.onSuccess();
    breaker.onSuccess();
    failTimes(breaker, 4);
    expect(breaker.state).toBe('closed');
    breaker.onFailure();
    expect(breaker.retryInMs()).toBe(10_000);
  });

  it('opens at once when tripped from outside', () => {
    const { breaker } = breakerAt();
    breaker.trip();
    expect(breaker.state).toBe('open');
    expect(breaker.allow()).toBe(false);
    expect(breaker.retryInMs()).toBe(10_000);
  });

  it('closes at once when reset, without waiting for the probe window', () => {
    const { breaker, changes } = halfOpen();
    breaker.onFailure();
    breaker.reset();
    expect(breaker.state).toBe('closed');
    expect(breaker.allow()).toBe(true);
    expect(breaker.snapshot()).toEqual({ state: 'closed', failures: 0, successes: 0, backoffMs: 10_000, openUntil: null });
    expect(changes.at(-1)).toBe('open->closed');
  });

  it('snapshots as plain JSON', () => {
    const { breaker, now } = breakerAt();
    failTimes(breaker, 2);
    expect(JSON.parse(JSON.stringify(breaker.snapshot()))).toEqual({ state: 'closed', failures: 2, successes: 0, backoffMs: 10_000, openUntil: null });
    failTimes(breaker, 3);
    expect(breaker.snapshot()).toMatchObject({ state: 'open', openUntil: now() + 10_000 });
  });

  it('takes other thresholds and windows', () => {
    let now = 0;
    const breaker = new CircuitBreaker({ failureThreshold: 1, successThreshold: 1, initialBackoffMs: 100, maxBackoffMs: 150, now: () => now });
    breaker.onFailure();
    expect(breaker.retryInMs()).toBe(100);
    now = 100;
    breaker.allow();
    breaker.onFailure();
    expect(breaker.retryInMs()).toBe(150);
    now = 250;
    breaker.allow();
    breaker.onSuccess();
    expect(breaker.state).toBe('closed');
  });
});

describe('the breaker registry', () => {
  it('keeps one breaker per provider, so one outage does not stop the others', () => {
    const registry = new BreakerRegistry();
    registry.get('openai').trip();
    expect(registry.get('openai').state).toBe('open');
    expect(registry.get('anthropic').state).toBe('closed');
    expect(registry.get('openai')).toBe(registry.get('openai'));
  });

  it('lists every breaker with its state and open window', () => {
    const registry = new BreakerRegistry({ now: () => 5_000 });
    registry.get('openai').trip();
    registry.get('anthropic');
    expect(registry.all()).toEqual([
      { provider: 'openai', state: 'open', openUntil: 15_000 },
      { provider: 'anthropic', state: 'closed', openUntil: null },
    ]);
  });

  it('lists a breaker whose open window has passed as half-open: its next call is a probe, and it is no longer down', () => {
    let now = 5_000;
    const registry = new BreakerRegistry({ now: () => now });
    registry.get('openai').trip();
    now = 15_000;
    expect(registry.all()).toEqual([{ provider: 'openai', state: 'half_open', openUntil: null }]);
    expect(registry.get('openai').allow()).toBe(true);
    expect(registry.all()).toEqual([{ provider: 'openai', state: 'half_open', openUntil: null }]);
  });

  it('reports each state change with its provider, for metrics', () => {
    let now = 0;
    const changes: Array<[string, BreakerState, BreakerState]> = [];
    const registry = new BreakerRegistry({ now: () => now }, (provider, from, to) => changes.push([provider, from, to]));
    registry.get('openai').trip();
    now = 10_000;
    registry.get('openai').allow();
    expect(changes).toEqual([
      ['openai', 'closed', 'open'],
      ['openai', 'open', 'half_open'],
    ]);
  });
});
