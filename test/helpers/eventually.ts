import { setTimeout as sleep } from 'node:timers/promises';

export interface EventuallyOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

function describeLast(last: { value: unknown } | { error: unknown } | null): string {
  if (last === null) return 'nothing was observed';
  if ('error' in last) return `last error: ${(last.error as Error)?.message ?? String(last.error)}`;
  const text = JSON.stringify(last.value) ?? String(last.value);
  return `last value: ${text.length > 500 ? `${text.slice(0, 500)}…` : text}`;
}

/**
 * Polls `probe` until `accept` holds for its value, and returns that value. A
 * probe that throws counts as "not yet". Past `timeoutMs` it throws, naming
 * `what` and what it last saw: a poll loop never falls through silently.
 */
export function eventually<T, U extends T>(
  what: string,
  probe: () => T | Promise<T>,
  accept: (value: T) => value is U,
  options?: EventuallyOptions,
): Promise<U>;
export function eventually<T>(what: string, probe: () => T | Promise<T>, accept?: (value: T) => boolean, options?: EventuallyOptions): Promise<T>;
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  accept: (value: T) => boolean = (value) => Boolean(value),
  { timeoutMs = 30_000, intervalMs = 100 }: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: { value: unknown } | { error: unknown } | null = null;
  for (;;) {
    try {
      const value = await probe();
      if (accept(value)) return value;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (Date.now() >= deadline) throw new Error(`${what}: not within ${timeoutMs} ms; ${describeLast(last)}`);
    await sleep(intervalMs);
  }
}

/** For `eventually`: a probe that has found what it looks for returns it, and undefined until then. */
export const isDefined = <T>(value: T | undefined): value is T => value !== undefined;
