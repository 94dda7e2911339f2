import type { TranscriptMessage } from '../api/types.js';

/**
 * What the workflow sends of a run's transcript: only the messages the worker
 * has not seen yet. Sending the whole transcript with every call would make a
 * run's history grow with the square of its length.
 */
export interface TranscriptDelta {
  /** Bumped by the workflow whenever it rewrites the transcript (compaction). */
  epoch: number;
  /** Messages before this index are expected in the worker's cache. */
  from: number;
  messages: TranscriptMessage[];
  /** The whole transcript's length, to check the rebuild. */
  length: number;
}

/** The worker does not hold this run's transcript: the workflow must send it whole. */
export class TranscriptCacheMiss extends Error {
  override name = 'TranscriptCacheMiss';
}

/** The transcripts of recent runs, per worker process, least recently used dropped first. */
export class TranscriptCache {
  private readonly entries = new Map<string, { epoch: number; messages: TranscriptMessage[]; system?: string }>();

  constructor(private readonly capacity = 500) {}

  /**
   * Rebuilds the full transcript from the cache and the delta, and remembers it
   * with the system prompt. The prompt comes with the call (`system`), or
   * (`cached`) from the cache, where the call that sent the whole transcript left it.
   */
  resolve(runId: string, delta: TranscriptDelta, prompt: { system?: string; cached?: boolean } = {}): { messages: TranscriptMessage[]; system?: string } {
    const entry = this.entries.get(runId);
    let messages: TranscriptMessage[];
    if (delta.from === 0) {
      messages = delta.messages;
    } else {
      if (!entry || entry.epoch !== delta.epoch || entry.messages.length < delta.from) {
        throw new TranscriptCacheMiss(`no cached transcript for ${runId} up to message ${delta.from} (epoch ${delta.epoch})`);
      }
      messages = entry.messages.slice(0, delta.from).concat(delta.messages);
    }
    if (messages.length !== delta.length) throw new TranscriptCacheMiss(`rebuilt ${messages.length} messages for ${runId}, expected ${delta.length}`);
    if (prompt.cached && entry?.system === undefined) throw new TranscriptCacheMiss(`no cached system prompt for ${runId}`);
    const system = prompt.cached ? entry?.system : prompt.system;
    this.entries.delete(runId);
    this.entries.set(runId, { epoch: delta.epoch, messages, ...(system !== undefined ? { system } : {}) });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    return { messages, ...(system !== undefined ? { system } : {}) };
  }
}
