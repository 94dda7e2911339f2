import type { ControlPayload } from '../api/control.js';
import type { SubAgentWait } from '../api/types.js';

/** A person's answer or decision that a run passes down to the sub-agent waiting for it. */
export type PassedDown = { runId: string } & (
  | { name: 'answer'; payload: ControlPayload<'answer'> }
  | { name: 'decideTool'; payload: ControlPayload<'decideTool'> }
);

/**
 * The person a sub-agent waits on is the parent's person too: a run shows its
 * sub-agent's question or held call as its own (it is paused while it waits
 * on it) and passes the answer or decision down. The wait shows until the
 * sub-agent says it is over, its delegate call returns, or a person's answer
 * or decision is passed down (the sub-agent says so again if it still waits).
 */
export class SubAgentWaits {
  private shown: { childId: string; wait: SubAgentWait } | null = null;
  private passing: PassedDown | null = null;

  /** The wait shown, if any. */
  get waiting(): SubAgentWait | null {
    return this.shown?.wait ?? null;
  }

  /** What child `childId` told: it (or one of its own) waits on a person, or no longer does. */
  note(childId: string, waiting: SubAgentWait | null): void {
    if (waiting) this.shown = { childId, wait: waiting };
    else this.forget(childId);
  }

  /** Child `childId` ended, or its parent stopped waiting for it: whatever it waited on is over. */
  forget(childId: string): void {
    if (this.shown?.childId === childId) this.shown = null;
  }

  /** Passes a person's answer or decision (already checked against `waiting`) down to the run that waits. */
  passDown(message: Omit<PassedDown, 'runId'>): void {
    if (!this.shown) return;
    this.passing = { runId: this.shown.wait.runId, ...message } as PassedDown;
    this.shown = null;
  }

  /** The answer or decision to send down, once. */
  takePassedDown(): PassedDown | null {
    const passing = this.passing;
    this.passing = null;
    return passing;
  }
}
