import type { Decision, Progress } from '../run/critic-watch.js';
import type { CriticRunInfo, Escalator } from './escalator.js';

/** A model's advice on a stalled run: a decision, or null (with why) when its answer was unusable; what asking cost either way. */
export interface LlmAdvice {
  decision: Decision | null;
  costUsd: number;
  error?: string;
}

/** How the escalator reaches a model (in the critic workflow: the `criticDecide` activity). */
export type AskModel = (run: CriticRunInfo, progress: Progress) => Promise<LlmAdvice>;

/** What the escalator reports to its owner: what the model cost, and why it fell back. */
export interface LlmEscalatorHooks {
  onCost(costUsd: number): void;
  onFallback(why: string): void;
}

/**
 * The `llm` critic policy: shows a model the stalled run and follows its
 * decision. A model that fails or answers nonsense is no reason to leave a
 * stall unanswered, so the escalator then asks its fallback (`ExtendOnce`),
 * which also keeps a broken model from ever killing a healthy run.
 */
export class LlmEscalator implements Escalator {
  constructor(
    private readonly ask: AskModel,
    private readonly fallback: Escalator,
    private readonly hooks: LlmEscalatorHooks,
  ) {}

  async onSoftTimeout(run: CriticRunInfo, progress: Progress): Promise<Decision> {
    try {
      const advice = await this.ask(run, progress);
      this.hooks.onCost(advice.costUsd);
      if (advice.decision) return advice.decision;
      this.hooks.onFallback(`llm critic gave no usable decision (${advice.error})`);
    } catch (err) {
      this.hooks.onFallback(`llm critic failed (${(err as Error).message})`);
    }
    return this.fallback.onSoftTimeout(run, progress);
  }
}
