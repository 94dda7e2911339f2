/**
 * The worker's side of live tokens, without HTTP: one relay per model call
 * holds what the call wrote so far (bounded) and feeds each reader through a
 * queue of its own. A reader that falls behind never grows memory: its
 * pending text is coalesced into one frame, and past a limit further text is
 * dropped and counted, so the reader is told how much it missed.
 */
import { randomBytes } from 'node:crypto';
import { READERS_PER_CALL, type TokenFrame } from '../api/token-stream.js';

/** Text waiting for one slow reader beyond this is dropped (and counted). */
export const PENDING_CHARS = 64 * 1024;
/** What a late reader is sent first: the call's text so far, as much as one reader's queue holds. */
export const BACKLOG_CHARS = PENDING_CHARS;

/** One reader's frames: text coalesced while it is busy, dropped past `limit`. */
export class TokenQueue {
  private pending = '';
  private dropped = 0;
  private ended: boolean | null = null;
  private closed = false;
  private wake: (() => void) | null = null;

  constructor(private readonly limit = PENDING_CHARS) {}

  push(text: string): void {
    const room = Math.max(0, this.limit - this.pending.length);
    this.pending += text.slice(0, room);
    this.dropped += Math.max(0, text.length - room);
    this.notify();
  }

  /** Counts text the reader will never get (a backlog that was cut). */
  skip(chars: number): void {
    this.dropped += chars;
    this.notify();
  }

  end(ok: boolean): void {
    this.ended ??= ok;
    this.notify();
  }

  /** The frames ready now, waiting for some if none are; null once the end was delivered. */
  async next(): Promise<TokenFrame[] | null> {
    while (!this.pending && !this.dropped && this.ended === null) await new Promise<void>((resolve) => (this.wake = resolve));
    if (this.closed) return null;
    const frames: TokenFrame[] = [];
    if (this.pending) frames.push({ event: 'token', text: this.pending });
    if (this.dropped) frames.push({ event: 'dropped', chars: this.dropped });
    if (this.ended !== null) {
      frames.push({ event: 'end', ok: this.ended });
      this.closed = true;
    }
    this.pending = '';
    this.dropped = 0;
    return frames;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

/** One model call's stream: its text so far and its readers. */
export class CallRelay {
  private text = '';
  private cut = 0;
  private ended: boolean | null = null;
  private readonly readers = new Set<TokenQueue>();

  push(text: string): void {
    if (this.ended !== null || !text) return;
    const room = Math.max(0, BACKLOG_CHARS - this.text.length);
    this.text += text.slice(0, room);
    this.cut += Math.max(0, text.length - room);
    for (const reader of this.readers) reader.push(text);
  }

  end(ok: boolean): void {
    this.ended ??= ok;
    for (const reader of this.readers) reader.end(ok);
    this.readers.clear();
  }

  /** A queue that starts with the text so far; null when the call has as many readers as it may. */
  subscribe(): { queue: TokenQueue; leave: () => void } | null {
    if (this.readers.size >= READERS_PER_CALL) return null;
    const queue = new TokenQueue();
    queue.push(this.text);
    if (this.cut) queue.skip(this.cut);
    if (this.ended !== null) queue.end(this.ended);
    else this.readers.add(queue);
    // A reader that hangs up ends its queue, so nothing waits on it for the rest of the call.
    const leave = () => {
      this.readers.delete(queue);
      queue.end(false);
    };
    return { queue, leave };
  }
}

/** The calls this worker streams now, each under an unguessable capability. */
export class TokenRelays {
  private readonly calls = new Map<string, CallRelay>();

  /** A new call's relay and its capability (32 URL-safe random characters). */
  open(): { capability: string; relay: CallRelay; close: (ok: boolean) => void } {
    const capability = randomBytes(24).toString('base64url');
    const relay = new CallRelay();
    this.calls.set(capability, relay);
    return {
      capability,
      relay,
      // A finished call closes its readers' streams and is forgotten: its text is in the activity's result.
      close: (ok) => {
        relay.end(ok);
        this.calls.delete(capability);
      },
    };
  }

  get(capability: string): CallRelay | undefined {
    return this.calls.get(capability);
  }

  get size(): number {
    return this.calls.size;
  }
}
