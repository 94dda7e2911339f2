import { setTimeout as sleep } from 'node:timers/promises';
import type { Lifecycle } from './lifecycle.js';

const SERVERLESS_DRAIN_MS = 2_000;

/** What the lifecycle needs of a worker: run it, and stop it. */
interface RunnableWorker {
  run(): Promise<void>;
  shutdown(): void;
}

/**
 * Runs `worker` as the lifecycle's "worker" part: stopping it drains the
 * worker (in-flight activities get its shutdown grace), then closes its
 * connection and runs `after` (a trace flush). Returns the run's promise.
 */
export async function runWorkerPart(
  life: Lifecycle,
  worker: RunnableWorker,
  connection: { close(): Promise<void> },
  after?: () => Promise<void>,
): Promise<{ running: Promise<void> }> {
  const running = worker.run();
  await life.add('worker', 'work', async () => {
    worker.shutdown();
    const drained = running.then(
      () => true,
      () => true,
    );
    // With the server gone, the drain's calls only retry, for some 15 s: a moment, then the process exits around it.
    if (!(await (life.aPartEnded ? Promise.race([drained, sleep(SERVERLESS_DRAIN_MS, false, { ref: false })]) : drained))) return;
    await connection.close();
    await after?.();
  });
  return { running };
}
