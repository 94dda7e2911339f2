import { Connection } from '@temporalio/client';
import { parseDuration } from '../api/duration.js';
import { startMetricsServer, workerReadiness } from '../ops/metrics-server.js';
import { withProcessMetrics } from '../ops/metrics.js';
import { freePort } from '../server/free-port.js';
import { createTetherWorker, temporalSettings } from '../worker.js';
import { announce, type OutputFormat } from './output.js';

/**
 * `tether worker`: one worker plus its metrics and health endpoints. SIGTERM
 * stops polling, lets in-flight activities finish within the grace time, then
 * cancels them (their tools' process trees die) so Temporal retries them elsewhere.
 */
export async function runWorkerProcess(opts: { taskQueue?: string; metricsPort: string; metricsHost: string; shutdownGrace: string }, format: OutputFormat = 'text'): Promise<void> {
  const settings = temporalSettings();
  const temporalMetricsPort = await freePort();
  const { worker, logger, connection, metrics, tracing } = await createTetherWorker({ taskQueue: opts.taskQueue, shutdownGraceMs: parseDuration(opts.shutdownGrace), temporalMetricsPort });
  const probe = await Connection.connect({ address: settings.address });
  const server = await startMetricsServer({
    port: Number(opts.metricsPort),
    host: opts.metricsHost,
    registry: withProcessMetrics(metrics.registry),
    temporalMetricsUrl: `http://127.0.0.1:${temporalMetricsPort}/metrics`,
    logger,
    readiness: workerReadiness(worker, probe, { address: settings.address }),
  });
  const taskQueue = opts.taskQueue ?? settings.taskQueue;
  announce(format, `worker polling ${taskQueue} at ${settings.address}; metrics, /live and /ready on ${server.url}`, {
    taskQueue,
    workspaceQueue: worker.workspaceQueue,
    address: settings.address,
    metricsUrl: `${server.url}/metrics`,
  });
  try {
    await worker.run();
  } finally {
    await server.close();
    await probe.close();
    await connection.close();
    await tracing?.flush();
  }
}
