import type { TokenEvent } from '../api/token-stream.js';
import { PAGE_PENDING_CHARS } from './token-queue.js';

/** What a page's stream is handed: each event, and the end of the run's tokens. */
export interface TokenPage {
  event(event: TokenEvent): void;
  done(): void;
}

/** Follows a run's live tokens until `signal` aborts or the run closes (src/client/token-follow.ts in the panel). */
export type FollowRun = (runId: string, onEvent: (event: TokenEvent) => void, signal: AbortSignal) => Promise<void>;

/** The call being streamed, as far as a page that joins now must be sent first. */
interface CallSoFar {
  step: number;
  attempt: number;
  text: string;
  cut: number;
}

/** One run's follower and the pages it feeds. */
class RunFeed {
  readonly pages = new Set<TokenPage>();
  private readonly stop = new AbortController();
  private call: CallSoFar | null = null;

  constructor(runId: string, follow: FollowRun, ended: () => void) {
    follow(runId, (event) => this.hand(event), this.stop.signal)
      .catch(() => undefined)
      .finally(() => {
        ended();
        for (const page of this.pages) page.done();
        this.pages.clear();
      });
  }

  join(page: TokenPage): void {
    if (this.call) {
      const { step, attempt, text, cut } = this.call;
      if (text) page.event({ type: 'token', step, attempt, text });
      if (cut) page.event({ type: 'token_notice', step, attempt, message: `${cut} characters of the reply came before this page joined and are not shown` });
    }
    this.pages.add(page);
  }

  leave(page: TokenPage): boolean {
    this.pages.delete(page);
    if (this.pages.size) return false;
    this.stop.abort();
    return true;
  }

  private hand(event: TokenEvent): void {
    this.remember(event);
    for (const page of this.pages) page.event(event);
  }

  private remember(event: TokenEvent): void {
    if (event.type === 'token_end' || event.type === 'token_interrupted') this.call = null;
    if (event.type !== 'token') return;
    if (this.call?.step !== event.step || this.call.attempt !== event.attempt) this.call = { step: event.step, attempt: event.attempt, text: '', cut: 0 };
    const room = Math.max(0, PAGE_PENDING_CHARS - this.call.text.length);
    this.call.text += event.text.slice(0, room);
    this.call.cut += Math.max(0, event.text.length - room);
  }
}

/**
 * The panel's live-token followers: one per run, however many pages watch it.
 * A worker streams a call to a few readers only (READERS_PER_CALL), which
 * pages must not use up between them; the CLI's followers need theirs too.
 * A page that joins mid-call is sent the call's text so far first.
 */
export class RunTokenFeeds {
  private readonly feeds = new Map<string, RunFeed>();

  constructor(private readonly follow: FollowRun) {}

  /** Feeds `page` the run's tokens; call the answer when the page goes. */
  join(runId: string, page: TokenPage): () => void {
    let feed = this.feeds.get(runId);
    if (!feed) {
      const created: RunFeed = new RunFeed(runId, this.follow, () => {
        if (this.feeds.get(runId) === created) this.feeds.delete(runId);
      });
      feed = created;
      this.feeds.set(runId, feed);
    }
    const joined = feed;
    joined.join(page);
    return () => {
      if (joined.leave(page) && this.feeds.get(runId) === joined) this.feeds.delete(runId);
    };
  }

  /** Runs followed now (one Temporal follower each). */
  get size(): number {
    return this.feeds.size;
  }
}
