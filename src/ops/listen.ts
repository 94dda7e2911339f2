import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';

/** A listening HTTP server: where it answers, and how to stop it. */
export interface Listening {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts `server` on host:port (0 = any free port) and resolves once it listens. */
export async function listen(server: Server, port: number, host: string): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    url: `http://${shown.includes(':') ? `[${shown}]` : shown}:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive clients (Prometheus, browsers) would otherwise hold close() until they hang up.
        server.closeAllConnections();
      }),
  };
}

/**
 * Serves a Hono app on node:http. The adapter replaces the global Request and
 * Response with its own subclasses (its default): without them, middleware that
 * rebuilds a request (bodyLimit on a chunked body) fails on the adapter's
 * lazily built requests.
 */
export function serveApp(app: { fetch: (request: Request) => Response | Promise<Response> }, port: number, host: string): Promise<Listening> {
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  return listen(server, port, host);
}
