/**
 * `GET /api/runs/:id/tokens`: the run's live tokens as Server-Sent Events,
 * read from whichever worker holds the model call (src/client/token-follow.ts),
 * once per run for all its pages (src/panel/token-feeds.ts), and relayed to each page. The page never learns a worker's address or
 * capability; it needs only the panel token.
 */
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { TokenEvent } from '../api/token-stream.js';
import { followTokens } from '../client/token-follow.js';
import type { TetherClient } from '../client/runs.js';
import { RunTokenFeeds } from './token-feeds.js';
import { PageTokenQueue } from './token-queue.js';

/** How often a run's follower describes it while no call streams: twice a second per run that open pages watch. */
const PAGE_POLL_MS = 500;

export interface TokenRelay {
  /** Opens a page's token stream, or answers 503 when `maxStreams` are open. */
  subscribe(c: Context, runId: string): Response;
}

/** The panel's token streams, at most `maxStreams` pages at once; the pages of one run share its follower. */
export function createTokenRelay(tc: TetherClient, maxStreams = 32, onCount?: (pages: number, runs: number) => void): TokenRelay {
  let open = 0;
  const count = () => onCount?.(open, feeds.size);
  const feeds = new RunTokenFeeds((runId, onEvent, signal) => followTokens(tc, runId, onEvent, { signal, intervalMs: PAGE_POLL_MS }));
  return {
    subscribe(c, runId) {
      if (open >= maxStreams)
        return c.json({ error: `too many open token streams (the limit is ${maxStreams}): close other panel tabs` }, 503, { 'retry-after': '5' });
      open++;
      return streamSSE(c, async (stream) => {
        count();
        const stop = new AbortController();
        const queue = new PageTokenQueue();
        let wake: (() => void) | null = null;
        stream.onAbort(() => {
          stop.abort();
          wake?.();
        });
        const onEvent = (event: TokenEvent) => {
          queue.push(event);
          wake?.();
        };
        let done = false;
        const leave = feeds.join(runId, {
          event: onEvent,
          done: () => {
            done = true;
            wake?.();
          },
        });
        try {
          await stream.write(': connected\n\n');
          while (!stop.signal.aborted) {
            if (queue.empty && !done) await new Promise<void>((resolve) => (wake = resolve));
            wake = null;
            for (const event of queue.take()) await stream.writeSSE({ event: event.type, data: JSON.stringify(event) });
            if (done && queue.empty) {
              // Said before the stream closes: a reader (a script with curl) can tell the run's end from a dropped connection.
              await stream.writeSSE({ event: 'ended', data: JSON.stringify({ type: 'ended', runId }) });
              break;
            }
          }
        } finally {
          leave();
          open--;
          count();
        }
      });
    },
  };
}
