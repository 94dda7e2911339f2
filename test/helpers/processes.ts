import { processesWithCommandLine } from '../../src/tools/process-tree.js';
import { eventually } from './eventually.js';

/** Live processes whose command line contains `token`. */
export const processesWith = processesWithCommandLine;

/** Waits until at least `count` processes carry the token; fails the test after `timeoutMs`. */
export function waitForProcesses(token: string, count = 1, timeoutMs = 15_000): Promise<number[]> {
  return eventually(
    `${count} processes with "${token}"`,
    () => processesWith(token),
    (found) => found.length >= count,
    { timeoutMs, intervalMs: 50 },
  );
}

/** A number of seconds unique to one test: `sleep <it>` runs long and can be found by its command line. */
export function uniqueSleep(): string {
  return `9${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}.${process.pid}`;
}
