import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

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

/** `/metrics` (Tether's and Temporal's series on one endpoint), `/live` and `/ready`. */
export async function startMetricsServer(opts: MetricsServerOptions): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      if (req.method !== 'GET') {
        res.writeHead(405, { allow: 'GET' }).end();
      } else if (url.pathname === '/metrics') {
        let text = await opts.registry.metrics();
        if (opts.temporalMetricsUrl) {
          const temporal = await fetch(opts.temporalMetricsUrl, { signal: AbortSignal.timeout(2_000) })
            .then((r) => r.text())
            .catch((err: Error) => `# temporal_* series unavailable: ${err.message}\n`);
          text += `\n${temporal}`;
        }
        res.writeHead(200, { 'content-type': opts.registry.contentType }).end(text);
      } else if (url.pathname === '/live') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('live\n');
      } else if (url.pathname === '/ready') {
        const reason = await opts.readiness().catch((err: Error) => err.message);
        res.writeHead(reason ? 503 : 200, { 'content-type': 'text/plain' }).end(reason ? `not ready: ${reason}\n` : 'ready\n');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      }
    } catch (err) {
      opts.logger?.error({ err }, 'metrics endpoint failed');
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}`,
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
