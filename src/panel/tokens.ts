/**
 * `GET /api/runs/:id/tokens`: the run's live tokens as Server-Sent Events,
 * read from whichever worker holds the model call (src/client/token-follow.ts)
 * and relayed to the page. The page never learns a worker's address or
 * capability; it needs only the panel token.
 */
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { TokenEvent } from '../api/token-stream.js';
import { followTokens } from '../client/token-follow.js';
import type { TetherClient } from '../client/runs.js';
import { PageTokenQueue } from './token-queue.js';

/** How often a page's stream describes the run while no call streams: twice a second per open page, at most 32 pages. */
const PAGE_POLL_MS = 500;

export interface TokenRelay {
  /** Opens a page's token stream, or answers 503 when `maxStreams` are open. */
  subscribe(c: Context, runId: string): Response;
}

/** The panel's token streams, at most `maxStreams` at once (each polls Temporal while it is open). */
export function createTokenRelay(tc: TetherClient, maxStreams = 32): TokenRelay {
  let open = 0;
  return {
    subscribe(c, runId) {
      if (open >= maxStreams)
        return c.json({ error: `too many open token streams (the limit is ${maxStreams}): close other panel tabs` }, 503, { 'retry-after': '5' });
      open++;
      return streamSSE(c, async (stream) => {
        const stop = new AbortController();
        stream.onAbort(() => stop.abort());
        const queue = new PageTokenQueue();
        let wake: (() => void) | null = null;
        const onEvent = (event: TokenEvent) => {
          queue.push(event);
          wake?.();
        };
        let done = false;
        const following = followTokens(tc, runId, onEvent, { signal: stop.signal, intervalMs: PAGE_POLL_MS }).finally(() => {
          done = true;
          wake?.();
        });
        try {
          await stream.write(': connected\n\n');
          while (!stop.signal.aborted) {
            if (queue.empty && !done) await new Promise<void>((resolve) => (wake = resolve));
            wake = null;
            for (const event of queue.take()) await stream.writeSSE({ event: event.type, data: JSON.stringify(event) });
            if (done && queue.empty) break;
          }
        } finally {
          stop.abort();
          await following.catch(() => undefined);
          open--;
        }
      });
    },
  };
}
