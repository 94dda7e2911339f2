/** Shared shapes of the public contract (DESIGN.md): states, status, result, transcript. */
import type { AuditVia, ControlName } from './control.js';

export const TERMINAL_STATES = ['completed', 'failed', 'killed', 'timeout', 'cancelled', 'stuck', 'needs_fix'] as const;
export const PAUSED_STATES = ['emergency_stopped', 'awaiting_approval', 'blocked', 'awaiting_tool_approval'] as const;
export type TerminalState = (typeof TERMINAL_STATES)[number];
export type PausedState = (typeof PAUSED_STATES)[number];
export type RunState = 'running' | TerminalState | PausedState;
export const RUN_STATES: RunState[] = ['running', ...TERMINAL_STATES, ...PAUSED_STATES];

export function isTerminal(state: RunState): state is TerminalState {
  return (TERMINAL_STATES as readonly string[]).includes(state);
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

export interface ToolCall {
  id: string;
  name: string;
  /** Parsed arguments; `undefined` when the model sent something that is not JSON (see argsError). */
  args: unknown;
  argsError?: string;
  /** Set when the arguments were dropped for their size (bytes of their JSON): the call is refused, never run. */
  argsBytes?: number;
}

/** What a tool returns to the model. A failure is a value, never an activity failure. */
export interface ToolResult {
  success: boolean;
  /** The (capped) text the model reads. */
  output: string;
  error?: string;
  exitCode?: number | null;
  truncated?: boolean;
  /** Workspace-relative path of the full output when it was capped. */
  fullOutputPath?: string;
  durationMs?: number;
  /** Set when a non-idempotent tool was interrupted by a crash and not re-run. */
  interrupted?: boolean;
  /**
   * The workspace checkpoint taken after a call that may change files (docs/fork.md):
   * its commit, and the commit of the workspace as it was before the run's first such call.
   */
  checkpoint?: { commit: string; baseline?: string };
  /** What the run's operators should know about how the tool ran (a weaker sandbox than the default); shown in `status.warnings`. */
  warnings?: string[];
}

export type TranscriptMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; source?: 'goal' | 'steer' | 'verify' | 'critic' | 'answer' | 'notice' | 'summary' }
  /** `usage`: the tokens of the model call that wrote it (absent in runs recorded before it was kept). */
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[]; usage?: Usage }
  | { role: 'tool'; toolCallId: string; toolName: string; content: string; success: boolean };

export interface EmergencyStopStatus {
  active: boolean;
  reason: string | null;
  since: string | null;
}

/** No emergency stop: a fresh object each time, as its holders replace or change it. */
export const noEmergencyStop = (): EmergencyStopStatus => ({ active: false, reason: null, since: null });

export interface CriticStatus {
  policy: string;
  softTimeoutMs: number;
  nextEscalationAt: string | null;
  decisions: Array<{ at: string; decision: string }>;
  /** What the critic's own model calls cost (the `llm` policy); counted in the run's cost. */
  costUsd?: number;
}

export interface BreakerStatus {
  provider: string;
  state: 'closed' | 'open' | 'half_open';
  openUntil?: string | null;
}

/** A tool call held for a person's decision (RunSpec `approvals`); answered with `decideTool`. */
export interface PendingToolCall {
  callId: string;
  tool: string;
  /** The arguments as the model sent them. */
  args: unknown;
  /** ISO time the call started waiting. */
  requestedAt: string;
}

/** The `status` query. */
export interface RunStatus {
  runId: string;
  state: RunState;
  step: number;
  maxSteps: number;
  /** ISO time; while paused it is the deadline as it would be if the run resumed now. */
  deadline: string;
  /** The run's own time when it answered (a paused run answers from its last task's time; clients move the deadline on from there). */
  asOf?: string;
  consecutiveErrors: number;
  maxConsecutiveErrors: number;
  emergencyStop: EmergencyStopStatus;
  lastActivityAt: string;
  lastTool: string | null;
  costUsd: number;
  budgetUsd: number | null;
  warnings: string[];
  cause?: string;
  model: string;
  goal: string;
  startedAt: string;
  usage: Usage;
  question?: string;
  /** The tool call waiting for a person's decision (state `awaiting_tool_approval`). */
  pendingToolCall?: PendingToolCall;
  /**
   * The sub-agent whose question or held call this run shows as its own (the
   * run waits on it, paused, with its deadline suspended); `answer` and
   * `decideTool` sent to this run reach it.
   */
  waitingSubAgent?: string;
  critic?: CriticStatus;
  children?: string[];
  continuedAsNew?: number;
  /** Circuit breakers of the worker that made the last LLM call; one whose open window has passed reads `half_open` (its next call is a probe). */
  breakers?: BreakerStatus[];
  /**
   * Set while every model the run may use has its circuit open: the run sends
   * nothing and waits until `until` (the shortest window), then asks again.
   * `why` is each provider's own failure. The wait counts as no error.
   */
  waitingForProvider?: { until: string; why: string };
  /**
   * Work that failed and waits to be tried again, from Temporal's record of
   * the run's pending activities (read by the client, not the workflow): a
   * model call backing off, for a long Retry-After perhaps, shows what failed
   * and when it is tried next. Absent when nothing is retrying.
   */
  retrying?: PendingRetry[];
  /** Bumped when compaction rewrites the transcript; with `transcriptLength`, tells a watcher (the panel) when to fetch it again. */
  transcriptEpoch?: number;
  transcriptLength?: number;
  /** Set when the run is a fork: the run and step it was forked from. */
  forkOf?: { runId: string; step: number };
  /** Who applied which control message, oldest first (the last 200); absent until the first. */
  audit?: AuditEntry[];
}

/** One applied control message in the run's audit trail. */
export interface AuditEntry {
  /** The control message's name (steer, extend, kill, emergencyStop, clearEmergency, approve, answer, decideTool), or `fork`: who started this run as a fork. */
  action: ControlName | 'fork';
  /** Who sent it: `user@host` or `--as` (CLI), the operator's name (panel), `critic`, or `unknown` (a message without `audit`). */
  by: string;
  via?: AuditVia;
  /** ISO workflow time it was applied. */
  at: string;
  /** Why, or what it asked for: a reason, a steer's first characters, an extension. */
  detail?: string;
}

/** The `emergencyState` query, shaped exactly like the reference safety system's status fields. */
export interface EmergencyState {
  emergency_stop: boolean;
  consecutive_errors: number;
  max_consecutive_errors: number;
}

export interface VerifyOutcome {
  passed: boolean;
  attempts: number;
  exitCode: number | null;
  output: string;
}

/** What `agentRun` returns (or carries in its failure details). */
export interface RunResult {
  runId: string;
  status: TerminalState;
  summary?: string;
  steps: number;
  costUsd: number;
  usage: Usage;
  cause?: string;
  verify?: VerifyOutcome;
  pattern?: string;
}

export const emptyUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

/** Progress the run reports to its critic. */
export interface ProgressReport {
  step: number;
  lastActivityAt: string;
  lastTool: string | null;
  ended?: boolean;
  /**
   * Sent when the run is paused (true) and when it goes on (false): a paused
   * run waits for a person, and is not stalled. Absent: unchanged.
   */
  paused?: boolean;
}

/** Input of the `critic` workflow, started by each run as a child. */
export interface CriticInput {
  runId: string;
  goal: string;
  model: string;
  policy: 'extend-once' | 'llm';
  softTimeoutMs: number;
  /** The model the `llm` policy asks (defaults to the run's). */
  criticModel?: string;
  /** History length at which the critic continues as new (the run's own `limits.maxHistoryEvents`). */
  maxHistoryEvents?: number;
  /** Carried across the critic's own continue-as-new. */
  state?: unknown;
}

/** What a delegated child run tells its parent when it trips its emergency stop. */
/** A person's wait in a sub-agent: the run that waits (the child, or one of its own), and what it waits on. */
export interface SubAgentWait {
  runId: string;
  question?: string;
  pendingToolCall?: PendingToolCall;
}

/** A delegated child run tells its parent that it, or one of its own, waits on a person (`waiting`), or no longer does (null). */
export interface ChildWait {
  childId: string;
  waiting: SubAgentWait | null;
}

export interface ChildEmergency {
  childId: string;
  reason: string;
  costUsd: number;
}

/** An activity of an open run that failed and waits for its next attempt (RunStatus.retrying). */
export interface PendingRetry {
  /** The activity: `callModel`, `runTool`, `runVerification`, … */
  activity: string;
  /** The attempt that comes next (2 after one failure). */
  attempt: number;
  /** The last attempt's failure, as the activity gave it. */
  lastFailure: string;
  /** When the next attempt is scheduled, if Temporal said. */
  nextAttemptAt?: string;
}
