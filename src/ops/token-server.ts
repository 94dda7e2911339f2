/**
 * The worker's token endpoint: `GET /tokens/<capability>` streams one model
 * call's text as Server-Sent Events while the call runs. The capability is
 * random per call and reaches followers only through the call's heartbeat (so
 * only those who may describe the run can read it); an unknown one answers a
 * bare 404, and a call with as many readers as it serves a 429. Bound to loopback unless TETHER_TOKEN_HOST says otherwise, like
 * the metrics port.
 */
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Logger } from 'pino';
import { READERS_PER_CALL, type TokenFrame } from '../api/token-stream.js';
import type { TokenRelays } from '../llm/token-relay.js';
import { serveApp, type Listening } from './listen.js';

export interface TokenServerOptions {
  relays: TokenRelays;
  host?: string;
  port?: number;
  logger?: Logger;
}

function frameData(frame: TokenFrame): string {
  const { event, ...data } = frame;
  return JSON.stringify(data);
}

/** The routes, apart from the listening socket (tests and the worker share them). */
export function tokenRoutes(relays: TokenRelays, logger?: Logger): Hono {
  const app = new Hono();
  app.get('/tokens/:capability', (c) => {
    const relay = relays.get(c.req.param('capability'));
    if (!relay) return c.text('not found\n', 404);
    const joined = relay.subscribe();
    // Told apart from a call that ended: a follower turned away says so rather than waiting on a stream that never comes.
    if (!joined) return c.text(`this call has ${READERS_PER_CALL} readers already\n`, 429);
    return streamSSE(c, async (stream) => {
      stream.onAbort(joined.leave);
      try {
        await stream.write(': connected\n\n');
        for (let frames = await joined.queue.next(); frames && !stream.aborted; frames = await joined.queue.next()) {
          for (const frame of frames) await stream.writeSSE({ event: frame.event, data: frameData(frame) });
        }
      } finally {
        joined.leave();
      }
    });
  });
  app.all('*', (c) => c.text('not found\n', 404));
  app.onError((err, c) => {
    logger?.warn({ err: err.message }, 'token stream failed');
    return c.body(null, 500);
  });
  return app;
}

/** Starts the token endpoint (loopback, any free port, by default). */
export function startTokenServer(opts: TokenServerOptions): Promise<Listening> {
  return serveApp(tokenRoutes(opts.relays, opts.logger), opts.port ?? 0, opts.host ?? '127.0.0.1');
}
