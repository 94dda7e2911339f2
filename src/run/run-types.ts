import type { AuditEntry, BreakerStatus, CriticStatus, TerminalState, ToolCall, Usage, VerifyOutcome } from '../api/types.js';
import type { BudgetState } from './budget.js';
import type { Checkpoint, ForkOf } from '../api/fork.js';
import type { LimitsSnapshot } from './limits.js';
import type { LoopResponse } from './loop-guard.js';
import type { SafetySnapshot } from './safety.js';
import type { StuckDetectorState } from './stuck-detector.js';
import type { TranscriptState } from './transcript.js';

/* The shapes RunState takes in and gives out. */

/** Everything a run must carry across continue-as-new, as plain JSON. */
export interface RunSnapshot extends TranscriptState {
  startedAtMs: number;
  step: number;
  usage: Usage;
  warnings: string[];
  lastActivityAtMs: number;
  lastTool: string | null;
  verifyAttempts: number;
  question: string | null;
  answers: string[];
  children: string[];
  safety: SafetySnapshot;
  limits: LimitsSnapshot;
  budget: BudgetState;
  continuedAsNew: number;
  stuck: StuckDetectorState;
  stuckWarned: boolean;
  /** The critic's last report, so its cost is not counted again after continue-as-new (absent in older runs). */
  critic?: CriticStatus;
  /** The workspace checkpoints taken so far (absent in runs from before checkpoints). */
  checkpoints?: Checkpoint[];
  /** Set when the run is a fork of another. */
  forkOf?: ForkOf;
  /** The audit trail (absent in runs from before it, and until the first control message). */
  audit?: AuditEntry[];
}

/** How a run ended. */
export interface Ending {
  status: TerminalState;
  cause?: string;
  summary?: string;
  verify?: VerifyOutcome;
  pattern?: string;
}

/** What recording a tool result set off: a trip of the emergency stop, a loop response, or neither. */
export interface ToolOutcome {
  tripped: string | null;
  loop: LoopResponse;
}

/** One model reply as the run records it. */
export interface ModelReply {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  costUsd: number;
  warnings: string[];
  breakers?: BreakerStatus[];
}

/** Thrown by `validate` when a control message is malformed or does not apply now. */
export class ControlRejected extends Error {
  override name = 'ControlRejected';
}

/** A control message for a run that is ending: its sender (a fleet stop sweeping a stale list) may take it as "not a failure". */
export class RunEnding extends ControlRejected {
  override name = 'RunEnding';
}
