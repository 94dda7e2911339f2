import type { TokenEvent } from '../api/token-stream.js';

/** Text queued for one slow page beyond this is dropped, and the page told how much. */
export const PAGE_PENDING_CHARS = 64 * 1024;

/**
 * The live-token events waiting for one page: tokens that pile up while the
 * page is busy are merged into one event; past `limit` characters further
 * text is dropped and counted, so a slow page never grows the panel's memory.
 */
export class PageTokenQueue {
  private events: TokenEvent[] = [];
  private chars = 0;
  private dropped: { step: number; attempt: number; chars: number } | null = null;

  constructor(private readonly limit = PAGE_PENDING_CHARS) {}

  push(event: TokenEvent): void {
    if (event.type !== 'token') {
      this.flushDropped();
      this.events.push(event);
      return;
    }
    const room = Math.max(0, this.limit - this.chars);
    const kept = event.text.slice(0, room);
    const lost = event.text.length - kept.length;
    if (lost) this.dropped = { step: event.step, attempt: event.attempt, chars: (this.dropped?.chars ?? 0) + lost };
    if (!kept) return;
    this.chars += kept.length;
    const last = this.events.at(-1);
    if (last?.type === 'token' && last.step === event.step && last.attempt === event.attempt) last.text += kept;
    else this.events.push({ ...event, text: kept });
  }

  /** Everything queued, in order, leaving the queue empty. */
  take(): TokenEvent[] {
    this.flushDropped();
    const events = this.events;
    this.events = [];
    this.chars = 0;
    return events;
  }

  get empty(): boolean {
    return this.events.length === 0 && !this.dropped;
  }

  private flushDropped(): void {
    if (!this.dropped) return;
    const { step, attempt, chars } = this.dropped;
    this.events.push({ type: 'token_notice', step, attempt, message: `${chars} characters of the reply dropped: this page fell behind` });
    this.dropped = null;
  }
}
