import type { ToolCall, TranscriptMessage } from '../api/types.js';
import { jsonBytes } from '../api/payload-limits.js';
import { type CompactionPlan, summaryMessage, transcriptChars } from './compaction.js';
import { fitTranscript } from './transcript-fit.js';

/** Plain JSON form of a transcript, carried across continue-as-new (the fields keep their RunSnapshot names). */
export interface TranscriptState {
  transcript: TranscriptMessage[];
  transcriptEpoch: number;
  pendingSteers: string[];
  compactionRetryAtStep: number | null;
}

/** After a failed compaction the run keeps its full context this many steps before trying again. */
const COMPACTION_RETRY_STEPS = 3;

/**
 * What the model reads, and what rewrites it: steers queued until the next
 * model call, compaction (a new epoch, so a worker's cached copy is known to
 * be stale) and when to try it again after a failure. One array for the run's
 * life, so the transcript query always sees the latest.
 */
export class Transcript {
  private readonly list: TranscriptMessage[];
  private epoch: number;
  private steers: string[];
  private compactionRetryAtStep: number | null;

  constructor(goal: string, state?: TranscriptState) {
    this.list = state?.transcript ?? [{ role: 'user', content: goal, source: 'goal' }];
    this.epoch = state?.transcriptEpoch ?? 0;
    this.steers = state?.pendingSteers ?? [];
    this.compactionRetryAtStep = state?.compactionRetryAtStep ?? null;
  }

  get messages(): readonly TranscriptMessage[] {
    return this.list;
  }

  /** Bumped whenever the transcript is rewritten rather than appended to. */
  get rewrites(): number {
    return this.epoch;
  }

  push(message: TranscriptMessage): void {
    this.list.push(message);
  }

  /** The calls of the model's last reply that have no result yet. */
  openCalls(): ToolCall[] {
    let at = this.list.length - 1;
    while (at >= 0 && this.list[at].role !== 'assistant') at -= 1;
    const reply = this.list[at];
    if (reply?.role !== 'assistant' || !reply.toolCalls?.length) return [];
    const answered = new Set(this.list.slice(at + 1).flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
    return reply.toolCalls.filter((call) => !answered.has(call.id));
  }

  /** Queues a steer for the next model call; returns how many are waiting. */
  queueSteer(message: string): number {
    return this.steers.push(message);
  }

  /** How many steers wait for the next model call. */
  get pendingSteers(): number {
    return this.steers.length;
  }

  /** Moves queued steers into the transcript, in order, just before an LLM call. */
  takeSteers(): string[] {
    const steers = this.steers;
    this.steers = [];
    for (const content of steers) this.list.push({ role: 'user', content, source: 'steer' });
    return steers;
  }

  /** Whether to compact before the next call: the context is over `maxChars`, and no recent attempt failed. */
  compactionDue(step: number, maxChars: number): boolean {
    if (transcriptChars(this.list) <= maxChars) return false;
    return this.compactionRetryAtStep === null || step >= this.compactionRetryAtStep;
  }

  /** Swaps in the compacted transcript, in the same array. */
  compact(plan: CompactionPlan, summary: string): void {
    this.list.splice(0, this.list.length, ...plan.head, summaryMessage(summary, plan.middle.length), ...plan.tail);
    this.epoch += 1;
    this.compactionRetryAtStep = null;
  }

  /** Compaction failed at `step`: keep the full context and try again a few steps later. */
  compactionFailed(step: number): void {
    this.compactionRetryAtStep = step + COMPACTION_RETRY_STEPS;
  }

  /**
   * Makes the transcript, with the steers still queued, fit `maxBytes` of JSON
   * (a new epoch when it had to be rewritten); returns whether it was. Queued
   * steers go in first, as the next model call would take them.
   */
  fit(maxBytes: number): boolean {
    if (jsonBytes(this.list) + jsonBytes(this.steers) <= maxBytes) return false;
    this.takeSteers();
    const fitted = fitTranscript(this.list, maxBytes);
    if (!fitted.changed) return false;
    this.list.splice(0, this.list.length, ...fitted.messages);
    this.epoch += 1;
    return true;
  }

  snapshot(): TranscriptState {
    return { transcript: this.list, transcriptEpoch: this.epoch, pendingSteers: this.steers, compactionRetryAtStep: this.compactionRetryAtStep };
  }
}
