import { describe, expect, it } from 'vitest';
import { CallsInFlight } from '../../src/activities/calls-in-flight.js';

const ok = { success: true, output: 'done' };

describe('the calls a worker remembers for a retry', () => {
  it('finds a call while it runs and after it finished, and stops it on request', async () => {
    const calls = new CallsInFlight();
    let release!: () => void;
    const running = calls.start('r/1/c1', () => new Promise((resolve) => (release = () => resolve(ok))));
    expect(calls.find('r/1/c1')).toBe(running);
    release();
    expect(await calls.find('r/1/c1')?.result).toEqual(ok);
    const stoppable = calls.start('r/1/c2', (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))));
    stoppable.stop(new Error('killed'));
    await expect(stoppable.result).rejects.toThrow('killed');
    // A call that failed leaves nothing for a retry to take.
    expect(calls.find('r/1/c2')).toBeUndefined();
  });

  it('stops a call the server gave up on unless a retry claims it in time', async () => {
    const calls = new CallsInFlight(60_000, 100, 20);
    const longCall = (signal: AbortSignal) =>
      new Promise<typeof ok>((resolve, reject) => {
        const timer = setTimeout(() => resolve(ok), 200);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      });
    const unclaimed = calls.start('run/1/gone', longCall);
    calls.abandoned('run/1/gone', new Error('the run is gone'));
    await expect(unclaimed.result).rejects.toThrow('the run is gone');
    const claimed = calls.start('run/1/back', longCall);
    calls.abandoned('run/1/back', new Error('the run is gone'));
    expect(calls.find('run/1/back')).toBe(claimed);
    expect(await claimed.result).toEqual(ok);
  });

  it('forgets finished calls after a while, and the oldest beyond its limit', async () => {
    const calls = new CallsInFlight(0, 2);
    await calls.start('a', async () => ok).result;
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(calls.find('a')).toBeUndefined();
    const bounded = new CallsInFlight(60_000, 2);
    for (const key of ['x', 'y', 'z']) await bounded.start(key, async () => ok).result;
    expect(['x', 'y', 'z'].map((k) => bounded.find(k) !== undefined)).toEqual([false, true, true]);
  });
});
