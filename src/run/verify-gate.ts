import type { VerifyOutcome } from '../api/types.js';

/** The verdict on one verification attempt. */
export type VerifyJudgement = { passed: true } | { passed: false; feedback: string; exhausted: boolean; cause: string };

/**
 * Verification-attempt accounting: each finish that reaches the gate uses one
 * attempt; an attempt the worker never completed (it died) is given back; the
 * last failed attempt ends the run `needs_fix`. Verification has its own
 * budget, so its failures never count towards the emergency stop.
 */
export class VerifyGate {
  constructor(
    private readonly verify: { command: string; maxAttempts: number },
    private attempts = 0,
  ) {}

  /** Attempts used so far (carried across continue-as-new). */
  get used(): number {
    return this.attempts;
  }

  /** Starts an attempt and returns its number. */
  begin(): number {
    this.attempts += 1;
    return this.attempts;
  }

  /** The worker running the attempt is gone: it never ran to the end, so it does not count. */
  abandon(): void {
    this.attempts = Math.max(0, this.attempts - 1);
  }

  /** Judges an attempt's outcome: what the model reads, and whether the budget is spent. */
  judge(outcome: VerifyOutcome, attempt: number): VerifyJudgement {
    if (outcome.passed) return { passed: true };
    const { command, maxAttempts } = this.verify;
    return {
      passed: false,
      feedback: `Verification failed (attempt ${attempt} of ${maxAttempts}): \`${command}\` exited with ${outcome.exitCode}.\n${outcome.output}`,
      exhausted: attempt >= maxAttempts,
      cause: `verification failed ${attempt === 1 ? 'once' : `${attempt} times`}: ${command}`,
    };
  }
}
