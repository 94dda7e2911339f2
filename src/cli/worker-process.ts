import { parseDuration } from '../api/duration.js';
import { createTetherWorker, temporalSettings } from '../worker.js';
import { startMetricsServer } from '../ops/metrics-server.js';
import { note } from './output.js';

/**
 * `tether worker`: one worker plus its metrics and health endpoints. SIGTERM
 * stops polling, lets in-flight activities finish within the grace time, then
 * cancels them (their tools' process trees die) so Temporal retries them elsewhere.
 */
export async function runWorkerProcess(opts: { taskQueue?: string; metricsPort: string; metricsHost: string; shutdownGrace: string }): Promise<void> {
  const settings = temporalSettings();
  const { worker, logger, connection } = await createTetherWorker({ taskQueue: opts.taskQueue, shutdownGraceMs: parseDuration(opts.shutdownGrace) });
  const metrics = await startMetricsServer({ port: Number(opts.metricsPort), host: opts.metricsHost, worker, logger });
  note(`worker polling ${opts.taskQueue ?? settings.taskQueue} at ${settings.address}; metrics on ${metrics.url}/metrics`);
  try {
    await worker.run();
  } finally {
    await metrics.close();
    await connection.close();
  }
}
