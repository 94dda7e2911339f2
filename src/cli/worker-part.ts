import type { Lifecycle } from './lifecycle.js';

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
    await running.catch(() => undefined);
    await connection.close();
    await after?.();
  });
  return { running };
}
