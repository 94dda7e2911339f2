import type { ToolCall, ToolResult } from '../api/types.js';
import { diagnosticMessage, signatureOf, StuckDetector, type StuckDetectorState, type StuckVerdict } from './stuck-detector.js';

type LoopKind = Extract<StuckVerdict, { stuck: true }>['kind'];

/** What the run does about a loop: nothing, show the model its loop (once), or stop the run as stuck. */
export type LoopResponse =
  | { action: 'none' }
  | { action: 'steer'; kind: LoopKind; pattern: string; message: string }
  | { action: 'stop'; kind: LoopKind; pattern: string; cause: string };

/** Plain JSON form of the guard, carried across continue-as-new. */
export interface LoopGuardState {
  stuck: StuckDetectorState;
  /** Set once the model has been shown its loop. */
  warned: boolean;
}

/**
 * The run's answer to a stuck loop: the first detection steers the model with
 * a diagnostic and gives it a fresh window; a second one ends the run `stuck`,
 * because a model that loops again after being shown its loop will not stop.
 */
export class LoopGuard {
  private readonly detector: StuckDetector;
  private warned: boolean;

  constructor(state?: LoopGuardState) {
    this.detector = new StuckDetector(undefined, state?.stuck);
    this.warned = state?.warned ?? false;
  }

  /** Feeds one counted tool result to the detector and says what to do. */
  observe(call: ToolCall, result: ToolResult): LoopResponse {
    const verdict = this.detector.record(signatureOf(call.name, call.args, result));
    if (!verdict.stuck) return { action: 'none' };
    const { kind, pattern } = verdict;
    if (this.warned) return { action: 'stop', kind, pattern, cause: `stuck in a loop (${kind}) after a diagnostic steer` };
    this.warned = true;
    this.detector.reset();
    return { action: 'steer', kind, pattern, message: diagnosticMessage(verdict) };
  }

  /** Starts afresh: a person who cleared a stop has looked, and the calls before it are not a loop to end the run on. */
  forget(): void {
    this.detector.reset();
    this.warned = false;
  }

  snapshot(): LoopGuardState {
    return { stuck: this.detector.snapshot(), warned: this.warned };
  }
}
