import { setTimeout as sleep } from 'node:timers/promises';
import { processesWithCommandLine } from '../../src/tools/process-tree.js';

/** Live processes whose command line contains `token`. */
export const processesWith = processesWithCommandLine;

/** Waits until at least `count` processes carry the token; fails the test after `timeoutMs`. */
export async function waitForProcesses(token: string, count = 1, timeoutMs = 15_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = processesWith(token);
    if (found.length >= count) return found;
    if (Date.now() > deadline) throw new Error(`fewer than ${count} processes with "${token}" within ${timeoutMs} ms (found ${found.length})`);
    await sleep(50);
  }
}

/** A number of seconds unique to one test: `sleep <it>` runs long and can be found by its command line. */
export function uniqueSleep(): string {
  return `9${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}.${process.pid}`;
}
