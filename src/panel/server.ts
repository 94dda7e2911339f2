import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Counter, Gauge, Registry } from 'prom-client';
import type { TetherClient } from '../client/runs.js';
import { withProcessMetrics } from '../ops/metrics.js';
import { listen } from '../ops/listen.js';
import { handleApi, HttpError } from './api.js';
import { serveAsset } from './assets.js';
import { createEventHub } from './events.js';

export interface PanelOptions {
  client: TetherClient;
  port: number;
  host?: string;
  token?: string;
  temporalUiUrl?: string;
}

export interface Panel {
  url: string;
  token: string;
  port: number;
  close(): Promise<void>;
}

/** Headers on every response: nothing inline, nothing framed, nothing leaked in a referrer. */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer\s+(.+)$/i.exec(header ?? '')?.[1] ?? '';
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The operator's web panel: a small page and the JSON API it uses. Every /api
 * request needs the token in the Authorization header — never a cookie — so
 * another site cannot drive it from a visitor's browser.
 */
export async function startPanel(opts: PanelOptions): Promise<Panel> {
  const token = opts.token ?? process.env.TETHER_PANEL_TOKEN ?? randomBytes(18).toString('base64url');
  const host = opts.host ?? '127.0.0.1';
  const registry = withProcessMetrics(new Registry());
  const requests = new Counter({ name: 'tether_panel_http_requests_total', help: 'Panel HTTP requests', labelNames: ['route', 'status'], registers: [registry] });
  const sseClients = new Gauge({ name: 'tether_panel_sse_clients', help: 'Open event streams', registers: [registry] });
  const hub = createEventHub(opts.client, (n) => sseClients.set(n));
  const context = { client: opts.client, hub, temporalUiUrl: opts.temporalUiUrl ?? 'http://localhost:8233' };

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://panel');
    let route = url.pathname.startsWith('/api/') ? url.pathname.replace(/\/runs\/[^/]+/, '/runs/:id') : url.pathname;
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    res.once('finish', () => requests.inc({ route, status: String(res.statusCode) }));
    try {
      if (url.pathname === '/live') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('live\n');
      if (url.pathname === '/ready') {
        const reason = await opts.client.connection
          .withDeadline(Date.now() + 2_000, () => opts.client.connection.workflowService.getSystemInfo({}))
          .then(() => null, (err: Error) => `Temporal unreachable: ${err.message.split('\n')[0]}`);
        return void res.writeHead(reason ? 503 : 200, { 'content-type': 'text/plain' }).end(reason ? `not ready: ${reason}\n` : 'ready\n');
      }
      if (url.pathname === '/metrics') return void res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
      if (url.pathname.startsWith('/api/')) {
        if (!tokenMatches(req.headers.authorization, token)) throw new HttpError(401, 'missing or wrong token: send Authorization: Bearer <TETHER_PANEL_TOKEN>');
        return await handleApi(req, res, url, context);
      }
      route = 'asset';
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'method not allowed');
      await serveAsset(url.pathname, res);
    } catch (err) {
      const status = err instanceof HttpError ? err.status : 500;
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: status === 500 ? `internal error: ${(err as Error).message}` : (err as Error).message }));
    }
  });
  const listening = await listen(server, opts.port, host);
  return {
    url: `${listening.url}/`,
    token,
    port: listening.port,
    async close() {
      hub.close();
      await listening.close();
    },
  };
}
