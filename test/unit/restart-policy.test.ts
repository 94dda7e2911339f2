import { describe, expect, it } from 'vitest';
import { FIRST_DELAY_MS, HEALTHY_AFTER_MS, MAX_DELAY_MS, restartDelay } from '../../src/cluster/restart-policy.js';

describe("restartDelay (compose's unless-stopped rhythm)", () => {
  const now = 1_000_000;

  it('starts a part that never stopped before after the first delay', () => {
    expect(restartDelay(undefined, now)).toBe(FIRST_DELAY_MS);
  });

  it('doubles the delay each time a part stops again soon after it was started', () => {
    let history = { lastDelayMs: FIRST_DELAY_MS, startedAt: now };
    const delays = [];
    for (let i = 0; i < 12; i++) {
      const delay = restartDelay(history, history.startedAt + 1_000);
      delays.push(delay);
      history = { lastDelayMs: delay, startedAt: history.startedAt + 1_000 + delay };
    }
    expect(delays.slice(0, 4)).toEqual([200, 400, 800, 1_600]);
    expect(delays.at(-1)).toBe(MAX_DELAY_MS);
    expect(Math.max(...delays)).toBe(MAX_DELAY_MS);
  });

  it('is quick again for a part that ran long enough to count as healthy', () => {
    expect(restartDelay({ lastDelayMs: MAX_DELAY_MS, startedAt: now }, now + HEALTHY_AFTER_MS)).toBe(FIRST_DELAY_MS);
    expect(restartDelay({ lastDelayMs: MAX_DELAY_MS, startedAt: now }, now + HEALTHY_AFTER_MS - 1)).toBe(MAX_DELAY_MS);
  });
});
