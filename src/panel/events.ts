import type { IncomingMessage, ServerResponse } from 'node:http';
import { listRuns } from '../client/list.js';
import { getStatus, getTranscript, type TetherClient } from '../client/runs.js';

export interface EventHub {
  subscribe(req: IncomingMessage, res: ServerResponse, runId: string | null): void;
  /** Polls now instead of at the next tick (after an action). */
  poke(): void;
  close(): void;
}

interface Subscriber {
  res: ServerResponse;
  runId: string | null;
  last: Map<string, string>;
}

/**
 * Server-Sent Events for the page. One poller serves every subscriber: it
 * reads the visibility list and the status of each watched run once a second,
 * and pushes only what changed. It stops when nobody listens.
 */
export function createEventHub(tc: TetherClient, onCount: (n: number) => void, intervalMs = 1_000): EventHub {
  const subscribers = new Set<Subscriber>();
  let timer: NodeJS.Timeout | null = null;
  let polling = false;

  function write(sub: Subscriber, event: string, data: unknown): void {
    const json = JSON.stringify(data);
    if (sub.last.get(event) === json) return;
    sub.last.set(event, json);
    sub.res.write(`event: ${event}\ndata: ${json}\n\n`);
  }

  async function poll(): Promise<void> {
    if (polling || subscribers.size === 0) return;
    polling = true;
    try {
      const runs = await listRuns(tc, { limit: 200 }).then((list) => ({ runs: list }), (err: Error) => ({ error: err.message }));
      const watched = new Set([...subscribers].map((s) => s.runId).filter((id): id is string => id !== null));
      const details = new Map<string, unknown>();
      await Promise.all(
        [...watched].map(async (runId) => {
          try {
            details.set(runId, { status: await getStatus(tc, runId), transcript: await getTranscript(tc, runId) });
          } catch (err) {
            details.set(runId, { error: (err as Error).message });
          }
        }),
      );
      for (const sub of subscribers) {
        write(sub, 'runs', runs);
        if (sub.runId) write(sub, 'run', details.get(sub.runId));
      }
    } finally {
      polling = false;
    }
  }

  function schedule(): void {
    if (timer || subscribers.size === 0) return;
    timer = setInterval(() => void poll(), intervalMs);
  }

  return {
    subscribe(req, res, runId) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
      res.write(': connected\n\n');
      const sub: Subscriber = { res, runId, last: new Map() };
      subscribers.add(sub);
      onCount(subscribers.size);
      req.once('close', () => {
        subscribers.delete(sub);
        onCount(subscribers.size);
        if (subscribers.size === 0 && timer) {
          clearInterval(timer);
          timer = null;
        }
      });
      schedule();
      void poll();
    },
    poke() {
      void poll();
    },
    close() {
      if (timer) clearInterval(timer);
      timer = null;
      for (const sub of subscribers) sub.res.end();
      subscribers.clear();
    },
  };
}
