import type { ScenarioReport } from './report.js';
import type { Stack } from './stack.js';

/** What every scenario gets: the shared stack, the size to run at, and a seeded random source. */
export interface ChaosContext {
  stack: Stack;
  quick: boolean;
  log(message: string): void;
  random(): number;
}

export type Scenario = (ctx: ChaosContext) => Promise<Omit<ScenarioReport, 'seconds'>>;

/** A small seeded generator (mulberry32), so a failing storm can be replayed with the same seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs `fn` over `items` with at most `limit` at once. */
export async function inBatches<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/** Polls `probe` until it is truthy; throws naming `what` after `timeoutMs` (a wait never falls through silently). */
export async function until(what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await Promise.resolve(probe()).catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
