/** What one pass over a run's models came to, when none of them replied. */
export type SweepVerdict =
  /** Every model's context overflowed and compaction could not help: the run ends, saying why. */
  | { kind: 'end'; cause: string }
  /** A model failed after its retries: one failed step, counted towards the emergency stop. */
  | { kind: 'count_failure'; error: string }
  /** Every other provider's circuit is open: wait out the shortest window, then ask again. */
  | { kind: 'wait'; ms: number; why: string; asFailure: string };

/** A wait is never shorter than this, so a circuit about to close is not asked in a tight loop. */
const MIN_WAIT_MS = 1_000;
/** Reasons are kept to this many characters: they go into the run's status. */
const MAX_REASON_CHARS = 1_000;

/**
 * One pass of a model call over the run's model and its fallbacks, in
 * order: each model that gave no reply adds why, and the verdict says what
 * the run does next. A failure after retries outweighs an open circuit (the
 * step failed), and an open circuit outweighs an overflow (a recovered
 * provider may have a larger window).
 */
export class ModelSweep {
  private shortestOpenMs = Number.POSITIVE_INFINITY;
  private readonly openBecause: string[] = [];
  private readonly overflows: string[] = [];
  private lastFailure: string | null = null;

  /** The provider's circuit is open for `ms` more. */
  circuitOpen(ms: number, why: string): void {
    this.shortestOpenMs = Math.min(this.shortestOpenMs, ms);
    this.openBecause.push(why);
  }

  /** The model failed after its retries. */
  failed(model: string, message: string): void {
    this.lastFailure = `${model}: ${message}`;
  }

  /** The model's context overflowed, and compaction could not make it fit (`notCompacted` says why). */
  overflowed(model: string, message: string, notCompacted: string): void {
    this.overflows.push(`${model}: ${message}; ${notCompacted}`);
  }

  /** How runs recorded before an overflow could end a run took one: a failed step, and the pass stops there. */
  overflowCountedAsFailure(): void {
    this.lastFailure = 'context overflow, and compaction did not help';
  }

  verdict(): SweepVerdict {
    const open = this.shortestOpenMs !== Number.POSITIVE_INFINITY;
    if (this.overflows.length && !this.lastFailure && !open) {
      return { kind: 'end', cause: `the context is too long for the model, and compaction did not make it fit (${this.overflows.join('; ')})` };
    }
    if (this.lastFailure) return { kind: 'count_failure', error: `LLM call failed after retries: ${this.lastFailure}` };
    // Two models of one provider share its circuit, and say the same.
    const why = [...new Set(this.openBecause)].join('; ');
    return {
      kind: 'wait',
      ms: Math.max(MIN_WAIT_MS, this.shortestOpenMs),
      why: why.slice(0, MAX_REASON_CHARS),
      asFailure: `no model answers: every provider's circuit is open after repeated failures (${why})`.slice(0, MAX_REASON_CHARS),
    };
  }
}
