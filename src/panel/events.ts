import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import { serverGone } from '../client/errors.js';
import { listRuns } from '../client/list.js';
import { type RunStatusReading, readRunStatus, readTranscript } from '../client/run-status.js';
import type { TetherClient } from '../client/runs.js';
import { nextView, transcriptDelta, transcriptKey, type TranscriptCursor, type TranscriptView } from './transcript-delta.js';

/** The page's live updates: `runs`, `run` and `transcript` events. */
export interface EventHub {
  /** Opens an event stream, or answers 503 when `maxStreams` are already open. */
  subscribe(c: Context, runId: string | null): Response;
  /** Polls now instead of at the next tick (after an action). */
  poke(): void;
  close(): void;
}

export interface EventHubOptions {
  /** Open streams beyond this are refused: each costs queries against Temporal. */
  maxStreams?: number;
  intervalMs?: number;
  onCount?: (open: number) => void;
}

interface Subscriber {
  stream: SSEStreamingApi;
  runId: string | null;
  last: Map<string, string>;
  cursor: TranscriptCursor | null;
  /** A write still in flight: a slow reader is skipped, never queued for. */
  busy: boolean;
  end(): void;
}

/** What the poller knows of one watched run. */
interface Watched {
  reading?: RunStatusReading;
  error?: string;
  /** Why the transcript could not be read (an ended run with no worker to replay it), and when that was. */
  transcriptError?: { message: string; at: number };
  key?: string;
  view: TranscriptView | null;
}

type Event = { event: string; data: string };

/** How often an unreadable transcript is asked again: a worker may come back, but each try can wait for one. */
const TRANSCRIPT_RETRY_MS = 30_000;

/**
 * The status of `runId` and, only when it may have changed, its transcript.
 * An ended run's status needs no worker, so it shows even when its transcript
 * cannot be read.
 */
async function refresh(tc: TetherClient, runId: string, prev: Watched | undefined): Promise<Watched> {
  const view = prev?.view ?? null;
  let reading: RunStatusReading;
  try {
    reading = await readRunStatus(tc, runId, prev?.reading);
  } catch (err) {
    return { error: failureText(err), view };
  }
  const key = transcriptKey(reading.status);
  if (prev?.view && prev.key === key) return { reading, key, view };
  const failed = prev?.transcriptError;
  if (failed && reading.closedExecution && Date.now() - failed.at < TRANSCRIPT_RETRY_MS) return { reading, transcriptError: failed, view };
  try {
    return { reading, key, view: nextView(view, await readTranscript(tc, runId, reading)) };
  } catch (err) {
    return { reading, transcriptError: { message: failureText(err), at: Date.now() }, view };
  }
}

/** The events `sub` has not seen yet; records them as seen. */
function pending(sub: Subscriber, runs: unknown, watched: Watched | undefined): Event[] {
  const events: Event[] = [];
  const changed = (event: string, value: unknown) => {
    const data = JSON.stringify(value);
    if (sub.last.get(event) !== data) events.push({ event, data });
    sub.last.set(event, data);
  };
  changed('runs', runs);
  if (!sub.runId || !watched) return events;
  const run = watched.error !== undefined ? { error: watched.error } : { status: watched.reading?.status, transcriptError: watched.transcriptError?.message };
  changed('run', run);
  const delta = watched.view && transcriptDelta(sub.cursor, watched.view);
  if (delta) {
    events.push({ event: 'transcript', data: JSON.stringify(delta) });
    sub.cursor = { epoch: delta.epoch, length: delta.length };
  }
  return events;
}

async function deliver(sub: Subscriber, events: Event[]): Promise<void> {
  sub.busy = true;
  try {
    for (const event of events) await sub.stream.writeSSE(event);
  } finally {
    sub.busy = false;
  }
}

/**
 * Server-Sent Events for the page. One poller serves every stream: once a
 * second it reads the visibility list and the status of each watched run, the
 * transcript only when the status says it changed, and sends each stream only
 * what is new to it (transcripts as deltas). It stops when nobody listens.
 */
class StreamHub implements EventHub {
  private readonly subscribers = new Set<Subscriber>();
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;

  constructor(
    private readonly tc: TetherClient,
    private readonly maxStreams: number,
    private readonly intervalMs: number,
    private readonly onCount: (open: number) => void,
  ) {}

  subscribe(c: Context, runId: string | null): Response {
    if (this.subscribers.size >= this.maxStreams) {
      const error = `too many open event streams (the limit is ${this.maxStreams}): close other panel tabs, then retry`;
      return c.json({ error }, 503, { 'retry-after': '5' });
    }
    return streamSSE(c, async (stream) => {
      let end = () => {};
      const ended = new Promise<void>((resolve) => {
        end = resolve;
      });
      // Counted at once, before any await, so concurrent requests cannot all slip under the limit.
      const sub: Subscriber = { stream, runId, last: new Map(), cursor: null, busy: true, end };
      stream.onAbort(end);
      this.opened(sub);
      try {
        await stream.write(': connected\n\n');
        sub.busy = false;
        this.poke();
        await ended;
      } finally {
        this.closed(sub);
      }
    });
  }

  poke(): void {
    void this.poll();
  }

  close(): void {
    for (const sub of this.subscribers) sub.end();
  }

  private async poll(): Promise<void> {
    if (this.polling || this.subscribers.size === 0) return;
    this.polling = true;
    try {
      const runs = await listRuns(this.tc, { limit: 200 }).then(
        (list) => ({ runs: list }),
        (err: Error) => ({ error: failureText(err) }),
      );
      const ids = new Set([...this.subscribers].flatMap((s) => (s.runId ? [s.runId] : [])));
      for (const id of this.watched.keys()) if (!ids.has(id)) this.watched.delete(id);
      await Promise.all([...ids].map(async (id) => this.watched.set(id, await refresh(this.tc, id, this.watched.get(id)))));
      for (const sub of this.subscribers) {
        if (sub.busy) continue;
        const events = pending(sub, runs, sub.runId ? this.watched.get(sub.runId) : undefined);
        if (events.length) void deliver(sub, events);
      }
    } finally {
      this.polling = false;
    }
  }

  private opened(sub: Subscriber): void {
    this.subscribers.add(sub);
    this.onCount(this.subscribers.size);
    this.timer ??= setInterval(() => this.poke(), this.intervalMs);
  }

  private closed(sub: Subscriber): void {
    this.subscribers.delete(sub);
    this.onCount(this.subscribers.size);
    if (this.subscribers.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}

/** The panel's event hub; see StreamHub. */
export function createEventHub(tc: TetherClient, opts: EventHubOptions = {}): EventHub {
  return new StreamHub(tc, opts.maxStreams ?? 32, opts.intervalMs ?? 1_000, opts.onCount ?? (() => {}));
}

/** What the page shows for a failed read: a server that has gone away is said in words, not as gRPC's status. */
function failureText(err: unknown): string {
  return (serverGone(err) ?? (err as Error)).message;
}
