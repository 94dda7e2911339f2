import type { RunStatus, TranscriptMessage } from '../api/types.js';

/** The panel's copy of one run's transcript, and how many rewrites (compactions) it has seen. */
export interface TranscriptView {
  epoch: number;
  messages: TranscriptMessage[];
}

/** How much of a transcript one watcher holds. */
export interface TranscriptCursor {
  epoch: number;
  length: number;
}

/** What a watcher is sent: the messages from index `from` on; `from: 0` replaces what it holds. */
export interface TranscriptDelta {
  epoch: number;
  from: number;
  messages: TranscriptMessage[];
  length: number;
}

const same = (a: TranscriptMessage | undefined, b: TranscriptMessage | undefined) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The view after fetching `messages`. A transcript only grows at its end, so
 * one that is shorter, or whose last known message changed, was rewritten by
 * compaction: the epoch moves and every watcher gets it whole.
 */
export function nextView(prev: TranscriptView | null, messages: TranscriptMessage[]): TranscriptView {
  if (!prev) return { epoch: 0, messages };
  const known = prev.messages.length;
  const grew = messages.length >= known && (known === 0 || same(prev.messages[known - 1], messages[known - 1]));
  return { epoch: grew ? prev.epoch : prev.epoch + 1, messages };
}

/** What to send a watcher that holds `sent`, or null when it is up to date. */
export function transcriptDelta(sent: TranscriptCursor | null, view: TranscriptView): TranscriptDelta | null {
  const length = view.messages.length;
  const from = sent && sent.epoch === view.epoch && sent.length <= length ? sent.length : 0;
  if (sent && sent.epoch === view.epoch && from === length) return null;
  return { epoch: view.epoch, from, messages: view.messages.slice(from), length };
}

/**
 * When the transcript may have changed: the run's own transcript counters when
 * its worker reports them, else any change of status but the deadline (which
 * moves by itself while a run is paused).
 */
export function transcriptKey(status: RunStatus): string {
  const { transcriptEpoch, transcriptLength } = status;
  if (transcriptEpoch !== undefined && transcriptLength !== undefined) return `${transcriptEpoch}:${transcriptLength}`;
  return JSON.stringify({ ...status, deadline: undefined });
}
