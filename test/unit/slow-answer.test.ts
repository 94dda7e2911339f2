import { afterEach, describe, expect, it, vi } from 'vitest';
import { notingSlowAnswer } from '../../src/cli/output.js';

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('a request a worker answers', () => {
  it('says on stderr why it waits once it has waited 3 s, and nothing after it is answered', async () => {
    vi.useFakeTimers();
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    let answer: (value: string) => void = () => {};
    const asked = notingSlowAnswer('r1', new Promise<string>((resolve) => (answer = resolve)));
    await vi.advanceTimersByTimeAsync(2_900);
    expect(stderr).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(200);
    expect(stderr).toHaveBeenCalledTimes(1);
    expect(String(stderr.mock.calls[0][0])).toMatch(/^run r1 has not answered in 3 s: the worker holding it is busy, or has just died .*; still waiting\n$/);
    answer('status');
    await expect(asked).resolves.toBe('status');
  });

  it('says nothing of a quick answer, nor later', async () => {
    vi.useFakeTimers();
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await expect(notingSlowAnswer('r1', Promise.resolve(1))).resolves.toBe(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(stderr).not.toHaveBeenCalled();
  });

  it('passes a refusal on as it came', async () => {
    await expect(notingSlowAnswer('r1', Promise.reject(new Error('no such run')))).rejects.toThrow('no such run');
  });
});
