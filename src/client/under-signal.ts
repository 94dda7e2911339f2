import type { TetherClient } from './runs.js';

/**
 * Runs `call`'s Temporal requests under a signal of its own, tied to
 * `signal`, and stops waiting on them when it aborts. Aborting cancels a
 * request's first attempt; the SDK's retry interceptor starts each retry (of a
 * server that went away) as a call of its own, out of the signal's reach, so
 * the wait itself is cut here and the retry runs out at its deadline. The
 * SDK's listener for each request goes with this call's signal instead of
 * piling up on a signal that lives for a whole follow.
 */
export function underSignal<T>(tc: TetherClient, signal: AbortSignal | undefined, call: () => Promise<T>): Promise<T> {
  if (!signal) return call();
  const own = AbortSignal.any([signal]);
  const work = tc.connection.withAbortSignal(own, call);
  return new Promise<T>((resolve, reject) => {
    if (own.aborted) reject(own.reason);
    own.addEventListener('abort', () => reject(own.reason), { once: true });
    work.then(resolve, reject);
  });
}
