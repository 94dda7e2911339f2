/**
 * The worker's operations port: `/metrics` for Prometheus, `/live` and
 * `/ready` for orchestrators. Temporal's SDK exports its `temporal_*` series
 * on a port of its own (Runtime telemetry); we append them to ours so one
 * scrape target per worker carries both.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { State as WorkerState } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { listen } from './listen.js';

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
    try {
      await connection.withDeadline(Date.now() + (opts.timeoutMs ?? 2_000), () => connection.workflowService.getSystemInfo({}));
      return null;
    } catch (err) {
      return `Temporal at ${opts.address} is unreachable: ${firstLine(err)}`;
    }
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

async function handle(opts: MetricsServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { pathname } = new URL(req.url ?? '/', 'http://localhost');
  if (req.method !== 'GET') {
    res.writeHead(405, { allow: 'GET' }).end();
  } else if (pathname === '/metrics') {
    const ours = await opts.registry.metrics();
    const theirs = opts.temporalMetricsUrl ? `\n${await temporalSeries(opts.temporalMetricsUrl)}` : '';
    res.writeHead(200, { 'content-type': opts.registry.contentType }).end(ours + theirs);
  } else if (pathname === '/live') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('live\n');
  } else if (pathname === '/ready') {
    const reason = await opts.readiness().catch(firstLine);
    res.writeHead(reason ? 503 : 200, { 'content-type': 'text/plain' }).end(reason ? `not ready: ${reason}\n` : 'ready\n');
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics, /live or /ready\n');
  }
}

/** Serves `/metrics` (Tether's and Temporal's series on one endpoint), `/live` and `/ready`. */
export async function startMetricsServer(opts: MetricsServerOptions): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const host = opts.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    handle(opts, req, res).catch((err) => {
      opts.logger?.error({ err }, 'metrics endpoint failed');
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  return listen(server, opts.port, host);
}
