/**
 * The worker's operations port: `/metrics` for Prometheus, `/live` and
 * `/ready` for orchestrators. Temporal's SDK exports its `temporal_*` series
 * on a port of its own (Runtime telemetry); we append them to ours so one
 * scrape target per worker carries both.
 */
import { Hono } from 'hono';
import type { State as WorkerState } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { serveApp, type Listening } from './listen.js';

export interface MetricsServerOptions {
  port: number;
  host?: string;
  registry: Registry;
  /** The SDK's own Prometheus endpoint; its `temporal_*` series are appended to ours. */
  temporalMetricsUrl?: string;
  /** Null when ready, else the reason (a 503 says it). */
  readiness: () => Promise<string | null>;
  logger?: Logger;
}

/** What a readiness probe needs of a Temporal connection; both client and native connections have it. */
export interface ProbeConnection {
  workflowService: { getSystemInfo(request: object): Promise<unknown> };
  withDeadline<R>(deadline: number, fn: () => Promise<R>): Promise<R>;
}

/** Null when Temporal answers a cheap call in time, else why not. */
export async function temporalUnreachable(connection: ProbeConnection, address: string, timeoutMs = 2_000): Promise<string | null> {
  try {
    await connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.getSystemInfo({}));
    return null;
  } catch (err) {
    return `Temporal at ${address} is unreachable: ${firstLine(err)}`;
  }
}

/**
 * Ready means the worker is polling (RUNNING) and Temporal answers a cheap
 * call now. The worker's own state is not enough: while the server is down its
 * pollers keep retrying and it still reports RUNNING.
 */
export function workerReadiness(
  worker: { getState(): WorkerState },
  connection: ProbeConnection,
  opts: { address: string; timeoutMs?: number },
): () => Promise<string | null> {
  return async () => {
    const state = worker.getState();
    if (state !== 'RUNNING') return `worker is ${state.toLowerCase()}`;
    return temporalUnreachable(connection, opts.address, opts.timeoutMs);
  };
}

function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split('\n')[0];
}

/** The SDK's series, or a comment saying why they are missing: Tether's own series must never depend on them. */
async function temporalSeries(url: string): Promise<string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return `# temporal_* series unavailable: ${url} answered ${response.status}\n`;
    return await response.text();
  } catch (err) {
    return `# temporal_* series unavailable: ${firstLine(err)}\n`;
  }
}

/** What `/metrics`, `/live` and `/ready` serve. */
export interface HealthOptions {
  registry: Registry;
  readiness: () => Promise<string | null>;
  /** More Prometheus text appended to the registry's (the SDK's series). */
  moreMetrics?: () => Promise<string>;
}

/** `/metrics`, `/live` and `/ready` as routes, shared by the worker's operations port and the panel. */
export function healthRoutes(opts: HealthOptions): Hono {
  const app = new Hono();
  app.get('/metrics', async (c) => {
    const ours = await opts.registry.metrics();
    const theirs = opts.moreMetrics ? `\n${await opts.moreMetrics()}` : '';
    return c.body(ours + theirs, 200, { 'content-type': opts.registry.contentType });
  });
  app.get('/live', (c) => c.text('live\n'));
  app.get('/ready', async (c) => {
    const reason = await opts.readiness().catch(firstLine);
    return c.text(reason ? `not ready: ${reason}\n` : 'ready\n', reason ? 503 : 200);
  });
  return app;
}

/** Serves `/metrics` (Tether's and Temporal's series on one endpoint), `/live` and `/ready`. */
export function startMetricsServer(opts: MetricsServerOptions): Promise<Listening> {
  const { temporalMetricsUrl } = opts;
  const app = new Hono();
  app.route('/', healthRoutes({ ...opts, moreMetrics: temporalMetricsUrl ? () => temporalSeries(temporalMetricsUrl) : undefined }));
  app.all('*', (c) => (c.req.method === 'GET' ? c.text('not found: try /metrics, /live or /ready\n', 404) : c.body(null, 405, { allow: 'GET' })));
  app.onError((err, c) => {
    opts.logger?.error({ err }, 'metrics endpoint failed');
    return c.body(null, 500);
  });
  return serveApp(app, opts.port, opts.host ?? '127.0.0.1');
}
