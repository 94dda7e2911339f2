import { setTimeout as sleep } from 'node:timers/promises';
import { connectTemporal } from '../server/temporal-connection.js';
import { isRunning, logTail, type Spawned } from './processes.js';

/** A part of the cluster that did not come up; the message quotes its log. */
export class StartError extends Error {
  override name = 'StartError';
}

/**
 * Polls `check` until it returns true. Fails at once when `proc` exits (with
 * the end of its log), and after `timeoutMs` otherwise.
 */
export async function waitUntil(what: string, check: () => Promise<boolean>, opts: { timeoutMs: number; proc?: Spawned; signal?: AbortSignal }): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError = '';
  for (;;) {
    opts.signal?.throwIfAborted();
    if (opts.proc && !isRunning(opts.proc)) {
      throw new StartError(`${what} exited during start-up. Its log (${opts.proc.log}) ends:\n${await logTail(opts.proc.log)}`);
    }
    try {
      if (await check()) return;
    } catch (err) {
      lastError = (err as Error).message.split('\n')[0];
    }
    if (Date.now() > deadline) {
      const tail = opts.proc ? ` Its log (${opts.proc.log}) ends:\n${await logTail(opts.proc.log)}` : '';
      throw new StartError(`${what} was not ready within ${opts.timeoutMs / 1000} s${lastError ? ` (last error: ${lastError})` : ''}.${tail}`);
    }
    await sleep(250);
  }
}

/** True when `url` answers 2xx. */
export async function httpOk(url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(3_000) });
  await response.body?.cancel();
  return response.ok;
}

/** True when a Temporal frontend answers GetSystemInfo (and, with a namespace, DescribeNamespace). */
export async function frontendAnswers(address: string, namespace?: string): Promise<boolean> {
  const connection = await connectTemporal({ address, connectTimeout: 2_000 });
  try {
    await connection.withDeadline(Date.now() + 3_000, async () => {
      await connection.workflowService.getSystemInfo({});
      if (namespace) await connection.workflowService.describeNamespace({ namespace });
    });
    return true;
  } finally {
    await connection.close();
  }
}
