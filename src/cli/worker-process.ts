import type { Connection } from '@temporalio/client';
import { connectOrExplain } from '../client/connect-or-explain.js';
import { namespaceMissing } from '../client/errors.js';
import { temporalSettings } from '../api/settings.js';
import { startMetricsServer, workerReadiness } from '../ops/metrics-server.js';
import { withProcessMetrics } from '../ops/metrics.js';
import { freePort } from '../server/free-port.js';
import { createTetherWorker } from '../worker.js';
import type { Lifecycle } from './lifecycle.js';
import { announce, type OutputFormat } from './output.js';
import { durationOption } from './duration-option.js';
import { checkPorts, portOption } from './ports.js';
import { runWorkerPart } from './worker-part.js';

/** A connection to Temporal, and its namespace there: a missing one is said with the way out, not as the SDK's raw status dump at start. */
async function reachTemporal(address: string, namespace: string): Promise<Connection> {
  const connection = await connectOrExplain(address);
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (err) {
    await connection.close();
    throw namespaceMissing(err) ?? err;
  }
  return connection;
}

/**
 * `tether worker`: one worker plus its metrics and health endpoints. On
 * Ctrl-C or SIGTERM it stops polling, lets in-flight activities finish within
 * the grace time, then cancels them (their tools' process trees die) so
 * Temporal retries them elsewhere. Returns what ends when the worker stops by itself.
 */
export async function startWorkerProcess(
  life: Lifecycle,
  opts: { taskQueue?: string; metricsPort: string; metricsHost: string; shutdownGrace: string },
  format: OutputFormat = 'text',
): Promise<{ running: Promise<void> }> {
  const metricsPort = portOption(opts.metricsPort, '--metrics-port');
  const shutdownGraceMs = durationOption(opts.shutdownGrace, '--shutdown-grace');
  await checkPorts('worker', [{ port: metricsPort, host: opts.metricsHost, owner: "the worker's metrics", flag: '--metrics-port' }]);
  const settings = temporalSettings(process.env);
  // Connected first, as every CLI verb connects: a server that is not there, or an address that never answers, is named at once with what to do.
  const probe = await reachTemporal(settings.address, settings.namespace);
  await life.add('readiness probe', 'surface', () => probe.close());
  const temporalMetricsPort = await freePort();
  const { worker, logger, connection, metrics, tracing } = await createTetherWorker({
    taskQueue: opts.taskQueue,
    shutdownGraceMs,
    temporalMetricsPort,
    shutdownSignals: [],
  });
  const { running } = await runWorkerPart(life, worker, connection, tracing ? () => tracing.flush() : undefined);
  const server = await startMetricsServer({
    port: metricsPort,
    host: opts.metricsHost,
    registry: withProcessMetrics(metrics.registry),
    temporalMetricsUrl: `http://127.0.0.1:${temporalMetricsPort}/metrics`,
    logger,
    readiness: workerReadiness(worker, probe, { address: settings.address }),
  });
  await life.add('metrics endpoint', 'surface', server.close);
  const taskQueue = opts.taskQueue ?? settings.taskQueue;
  announce(format, `worker polling ${taskQueue} at ${settings.address}; metrics, /live and /ready on ${server.url}. Ctrl-C to stop.`, {
    taskQueue,
    workspaceQueue: worker.workspaceQueue,
    address: settings.address,
    metricsUrl: `${server.url}/metrics`,
  });
  return { running };
}
