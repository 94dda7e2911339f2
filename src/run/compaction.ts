import type { TranscriptMessage } from '../api/types.js';

/** Total characters a transcript puts in front of the model: the measure of its context use. */
export function transcriptChars(transcript: readonly TranscriptMessage[]): number {
  let chars = 0;
  for (const m of transcript) {
    chars += m.content.length;
    if (m.role === 'assistant' && m.toolCalls) for (const c of m.toolCalls) chars += JSON.stringify(c.args ?? null).length + c.name.length;
  }
  return chars;
}

/** A transcript cut for compaction: `middle` is summarised, `head` and `tail` stay as they are. */
export interface CompactionPlan {
  head: TranscriptMessage[];
  middle: TranscriptMessage[];
  tail: TranscriptMessage[];
}

/**
 * Splits a transcript for compaction: the goal stays, the most recent turns
 * stay, and what lies between is summarised. The cut never separates a tool
 * call from its result, which providers reject.
 */
export function planCompaction(transcript: readonly TranscriptMessage[], keepRecent = 8): CompactionPlan | null {
  const head = transcript.slice(0, 1);
  // A short transcript keeps half of itself, so even an early overflow has something to summarise.
  const keep = Math.min(keepRecent, Math.max(2, Math.floor((transcript.length - 1) / 2)));
  let cut = Math.max(1, transcript.length - keep);
  // Move the cut back to a turn boundary: the tail must not start with a tool result.
  while (cut > 1 && transcript[cut]?.role === 'tool') cut--;
  const middle = transcript.slice(1, cut);
  if (middle.length < 2) return null;
  return { head, middle, tail: transcript.slice(cut) };
}

/** The message that stands in for the summarised turns. */
export function summaryMessage(summary: string, turns: number): TranscriptMessage {
  return { role: 'user', source: 'summary', content: `[Summary of ${turns} earlier messages, compacted to fit the context window]\n${summary}` };
}
