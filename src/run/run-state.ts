import { controlSchemas, type ControlName, type ControlPayload } from '../api/messages.js';
import { describeIssues, type RunSpec } from '../api/spec.js';
import {
  addUsage,
  emptyUsage,
  type BreakerStatus,
  type CriticStatus,
  type RunResult,
  type RunState as RunStateName,
  type RunStatus,
  type TerminalState,
  type ToolCall,
  type ToolResult,
  type TranscriptMessage,
  type Usage,
  type VerifyOutcome,
} from '../api/types.js';
import { Budget, type BudgetState } from './budget.js';
import { Limits, type LimitsSnapshot } from './limits.js';
import { Safety, type SafetySnapshot } from './safety.js';
import { StuckDetector, type StuckDetectorState } from './stuck-detector.js';

/** Everything a run must carry across continue-as-new, as plain JSON. */
export interface RunSnapshot {
  startedAtMs: number;
  step: number;
  transcript: TranscriptMessage[];
  pendingSteers: string[];
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
  compactionRetryAtStep: number | null;
  stuck: StuckDetectorState;
  stuckWarned: boolean;
  transcriptEpoch: number;
}

interface Ending {
  status: TerminalState;
  cause?: string;
  summary?: string;
  verify?: VerifyOutcome;
  pattern?: string;
}

/** Thrown by `validate` when a control message is malformed or does not apply now. */
export class ControlRejected extends Error {
  override name = 'ControlRejected';
}

/**
 * The whole state of one agent run as a plain state machine: no Temporal, no
 * I/O, time passed in. The workflow applies events to it and reads decisions
 * from it; tests drive it directly.
 */
export class RunState {
  readonly safety: Safety;
  readonly limits: Limits;
  readonly budget: Budget;
  step: number;
  readonly transcript: TranscriptMessage[];
  private pendingSteers: string[];
  usage: Usage;
  readonly warnings: string[];
  lastActivityAtMs: number;
  lastTool: string | null;
  verifyAttempts: number;
  question: string | null;
  private answers: string[];
  readonly children: string[];
  readonly startedAtMs: number;
  continuedAsNew: number;
  /** After a failed compaction, the step at which to try again. */
  compactionRetryAtStep: number | null;
  readonly stuck: StuckDetector;
  /** Set once the model has been shown its loop; a second detection ends the run `stuck`. */
  stuckWarned: boolean;
  /** Bumped whenever the transcript is rewritten rather than appended to. */
  transcriptEpoch: number;
  ending: Ending | null = null;
  critic: CriticStatus | undefined;
  breakers: BreakerStatus[] | undefined;

  constructor(
    readonly runId: string,
    readonly spec: RunSpec,
    nowMs: number,
    deadlineMs: number,
    snapshot?: RunSnapshot,
  ) {
    this.startedAtMs = snapshot?.startedAtMs ?? nowMs;
    this.safety = new Safety(spec.limits.maxConsecutiveErrors, snapshot?.safety);
    this.limits = new Limits(snapshot?.limits ?? { deadlineMs, maxSteps: spec.limits.maxSteps, pausedAtMs: null });
    this.budget = new Budget(spec.limits.budgetUsd ?? null, snapshot?.budget);
    this.step = snapshot?.step ?? 0;
    this.transcript = snapshot?.transcript ?? initialTranscript(spec);
    this.pendingSteers = snapshot?.pendingSteers ?? [];
    this.usage = snapshot?.usage ?? emptyUsage();
    this.warnings = snapshot?.warnings ?? [];
    this.lastActivityAtMs = snapshot?.lastActivityAtMs ?? nowMs;
    this.lastTool = snapshot?.lastTool ?? null;
    this.verifyAttempts = snapshot?.verifyAttempts ?? 0;
    this.question = snapshot?.question ?? null;
    this.answers = snapshot?.answers ?? [];
    this.children = snapshot?.children ?? [];
    this.continuedAsNew = snapshot?.continuedAsNew ?? 0;
    this.compactionRetryAtStep = snapshot?.compactionRetryAtStep ?? null;
    this.stuck = new StuckDetector(undefined, snapshot?.stuck);
    this.stuckWarned = snapshot?.stuckWarned ?? false;
    this.transcriptEpoch = snapshot?.transcriptEpoch ?? 0;
  }

  get ended(): boolean {
    return this.ending !== null;
  }

  get state(): RunStateName {
    if (this.ending) return this.ending.status;
    if (this.safety.active) return 'emergency_stopped';
    if (this.budget.exhausted) return 'awaiting_approval';
    if (this.question !== null) return 'blocked';
    return 'running';
  }

  get paused(): boolean {
    const state = this.state;
    return state === 'emergency_stopped' || state === 'awaiting_approval' || state === 'blocked';
  }

  get stepsExhausted(): boolean {
    return this.step >= this.limits.steps;
  }

  get costUsd(): number {
    return this.budget.spentUsd;
  }

  /** Keeps the deadline suspended exactly while the run is paused. Call after every change. */
  sync(nowMs: number): void {
    if (this.paused && !this.ended) this.limits.pause(nowMs);
    else this.limits.resume(nowMs);
  }

  /** Ends the run; the first ending wins, so a kill stays a kill. */
  end(ending: Ending, nowMs: number): void {
    if (this.ending) return;
    this.ending = ending;
    this.sync(nowMs);
  }

  /**
   * Checks a control message against its schema and the run's state. Used as
   * the Update validator (its message goes back to the caller) and before a
   * Signal is applied (a bad signal is logged and dropped).
   */
  validate<N extends ControlName>(name: N, payload: unknown): ControlPayload<N> {
    const parsed = controlSchemas[name].safeParse(payload ?? {});
    if (!parsed.success) throw new ControlRejected(`${name}: ${describeIssues(parsed.error)}`);
    if (this.ending) throw new ControlRejected(`${name}: run ${this.runId} has already ended (${this.ending.status})`);
    if (name === 'clearEmergency' && !this.safety.active) throw new ControlRejected('Emergency stop is not active');
    if (name === 'emergencyStop' && this.safety.active) throw new ControlRejected('Emergency stop is already active');
    if (name === 'approve' && !this.budget.exhausted) throw new ControlRejected('approve: the run is not awaiting budget approval');
    if (name === 'answer' && this.question === null) throw new ControlRejected('answer: the run is not waiting for an answer');
    return parsed.data as ControlPayload<N>;
  }

  /** Applies a validated control message. Returns a log line describing the effect. */
  apply<N extends ControlName>(name: N, payload: ControlPayload<N>, nowMs: number): string {
    const iso = new Date(nowMs).toISOString();
    let effect: string;
    switch (name) {
      case 'steer': {
        const { message } = payload as ControlPayload<'steer'>;
        this.pendingSteers.push(message);
        effect = `steer queued (${this.pendingSteers.length} pending)`;
        break;
      }
      case 'extend': {
        const { by, steps } = payload as ControlPayload<'extend'>;
        this.limits.extend(by, steps);
        effect = `extended: deadline ${new Date(this.limits.deadline(nowMs)).toISOString()}, maxSteps ${this.limits.steps}`;
        break;
      }
      case 'kill': {
        const { reason } = payload as ControlPayload<'kill'>;
        this.end({ status: 'killed', cause: reason }, nowMs);
        effect = `killed: ${reason}`;
        break;
      }
      case 'emergencyStop': {
        const { reason } = payload as ControlPayload<'emergencyStop'>;
        this.safety.trip(reason, iso);
        effect = `emergency stop tripped by hand: ${reason}`;
        break;
      }
      case 'clearEmergency':
        this.safety.clear();
        effect = 'emergency stop cleared; consecutive errors reset';
        break;
      case 'approve': {
        const { addBudgetUsd } = payload as ControlPayload<'approve'>;
        this.budget.approve(addBudgetUsd);
        effect = `budget raised by $${addBudgetUsd} to $${this.budget.budgetUsd}`;
        break;
      }
      case 'answer': {
        const { text } = payload as ControlPayload<'answer'>;
        this.answers.push(text);
        this.question = null;
        effect = 'question answered';
        break;
      }
      default:
        throw new ControlRejected(`unknown control message ${String(name)}`);
    }
    this.sync(nowMs);
    return effect;
  }

  /** Moves queued steers into the transcript, in order, just before an LLM call. */
  takeSteers(): string[] {
    const steers = this.pendingSteers;
    this.pendingSteers = [];
    for (const message of steers) this.transcript.push({ role: 'user', content: message, source: 'steer' });
    return steers;
  }

  /** The answer given to an `ask_user` question, once. */
  takeAnswer(): string | undefined {
    return this.answers.shift();
  }

  ask(question: string, nowMs: number): void {
    this.question = question;
    this.sync(nowMs);
  }

  recordModelReply(reply: { text: string; toolCalls: ToolCall[]; usage: Usage; costUsd: number }, nowMs: number): string[] {
    this.step += 1;
    this.usage = addUsage(this.usage, reply.usage);
    this.transcript.push({ role: 'assistant', content: reply.text, ...(reply.toolCalls.length ? { toolCalls: reply.toolCalls } : {}) });
    this.lastActivityAtMs = nowMs;
    const { warnings } = this.budget.add(reply.costUsd);
    this.addWarnings(warnings);
    this.sync(nowMs);
    return warnings;
  }

  addWarnings(warnings: string[]): void {
    for (const warning of warnings) if (!this.warnings.includes(warning)) this.warnings.push(warning);
  }

  addCost(costUsd: number, nowMs: number): string[] {
    const { warnings } = this.budget.add(costUsd);
    this.addWarnings(warnings);
    this.sync(nowMs);
    return warnings;
  }

  noteToolStart(name: string, nowMs: number): void {
    this.lastTool = name;
    this.lastActivityAtMs = nowMs;
  }

  /**
   * Records a tool result for the model and counts it for the safety system.
   * Returns the emergency-stop reason when this result tripped it.
   */
  recordToolResult(call: ToolCall, result: ToolResult, content: string, nowMs: number, counts = true): string | null {
    this.transcript.push({ role: 'tool', toolCallId: call.id, toolName: call.name, content, success: result.success });
    this.lastActivityAtMs = nowMs;
    if (!counts) return null;
    return this.recordOutcome(result.success, result.error ?? firstLine(result.output), nowMs);
  }

  /** Counts a failed step that produced no tool result (an LLM call that failed after its retries). */
  recordFailure(error: string, nowMs: number): string | null {
    this.lastActivityAtMs = nowMs;
    return this.recordOutcome(false, error, nowMs);
  }

  private recordOutcome(success: boolean, error: string, nowMs: number): string | null {
    if (success) {
      this.safety.recordSuccess();
      return null;
    }
    const tripped = this.safety.recordFailure(error, new Date(nowMs).toISOString());
    this.sync(nowMs);
    return tripped;
  }

  addUserMessage(content: string, source: 'verify' | 'notice' | 'critic' | 'summary'): void {
    this.transcript.push({ role: 'user', content, source });
  }

  status(nowMs: number): RunStatus {
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      runId: this.runId,
      state: this.state,
      step: this.step,
      maxSteps: this.limits.steps,
      deadline: iso(this.limits.deadline(nowMs)),
      consecutiveErrors: this.safety.errors,
      maxConsecutiveErrors: this.safety.max,
      emergencyStop: this.safety.status(),
      lastActivityAt: iso(this.lastActivityAtMs),
      lastTool: this.lastTool,
      costUsd: roundUsd(this.costUsd),
      budgetUsd: this.budget.budgetUsd,
      warnings: [...this.warnings],
      ...(this.ending?.cause ? { cause: this.ending.cause } : {}),
      model: this.spec.model,
      goal: this.spec.goal,
      startedAt: iso(this.startedAtMs),
      usage: { ...this.usage },
      ...(this.question !== null ? { question: this.question } : {}),
      ...(this.critic ? { critic: this.critic } : {}),
      ...(this.children.length ? { children: [...this.children] } : {}),
      ...(this.continuedAsNew ? { continuedAsNew: this.continuedAsNew } : {}),
      ...(this.breakers?.length ? { breakers: this.breakers } : {}),
    };
  }

  result(): RunResult {
    if (!this.ending) throw new Error('result() before the run ended');
    return {
      runId: this.runId,
      status: this.ending.status,
      ...(this.ending.summary !== undefined ? { summary: this.ending.summary } : {}),
      steps: this.step,
      costUsd: roundUsd(this.costUsd),
      usage: { ...this.usage },
      ...(this.ending.cause ? { cause: this.ending.cause } : {}),
      ...(this.ending.verify ? { verify: this.ending.verify } : {}),
      ...(this.ending.pattern ? { pattern: this.ending.pattern } : {}),
    };
  }

  snapshot(): RunSnapshot {
    return {
      startedAtMs: this.startedAtMs,
      step: this.step,
      transcript: this.transcript,
      pendingSteers: this.pendingSteers,
      usage: this.usage,
      warnings: this.warnings,
      lastActivityAtMs: this.lastActivityAtMs,
      lastTool: this.lastTool,
      verifyAttempts: this.verifyAttempts,
      question: this.question,
      answers: this.answers,
      children: this.children,
      safety: this.safety.snapshot(),
      limits: this.limits.snapshot(),
      budget: this.budget.snapshot(),
      continuedAsNew: this.continuedAsNew,
      compactionRetryAtStep: this.compactionRetryAtStep,
      stuck: this.stuck.snapshot(),
      stuckWarned: this.stuckWarned,
      transcriptEpoch: this.transcriptEpoch,
    };
  }

  /** Swaps in a compacted transcript (same array, so queries see it at once). */
  replaceTranscript(messages: TranscriptMessage[]): void {
    this.transcript.splice(0, this.transcript.length, ...messages);
    this.transcriptEpoch += 1;
  }
}

function initialTranscript(spec: RunSpec): TranscriptMessage[] {
  return [{ role: 'user', content: spec.goal, source: 'goal' }];
}

function firstLine(text: string): string {
  return (text.split('\n', 1)[0] ?? '').slice(0, 200);
}

function roundUsd(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}
