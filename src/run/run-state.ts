import { controlSchemas, type ControlName, type ControlPayload, ESTOP_ALREADY_ACTIVE, ESTOP_NOT_ACTIVE } from '../api/control.js';
import { describeBytes, MAX_TRANSCRIPT_BYTES } from '../api/payload-limits.js';
import { describeIssues, type RunSpec } from '../api/spec.js';
import {
  type AuditEntry,
  addUsage,
  emptyUsage,
  noEmergencyStop,
  type BreakerStatus,
  type CriticStatus,
  type RunResult,
  type RunState as RunStateName,
  type RunStatus,
  type SubAgentWait,
  type ToolCall,
  type ToolResult,
  type TranscriptMessage,
  type Usage,
  type VerifyOutcome,
} from '../api/types.js';
import { type AppliedControl, appendAudit, auditEntry } from '../api/audit.js';
import { Budget } from './budget.js';
import type { Checkpoint, ForkOf, ForkSource } from '../api/fork.js';
import type { CompactionPlan } from './compaction.js';
import { deadlineCause, Limits } from './limits.js';
import { LoopGuard, type LoopResponse } from './loop-guard.js';
import { toolResultText } from './prompt.js';
import { ControlRejected, type Ending, RunEnding, type ModelReply, type RunSnapshot, type ToolOutcome } from './run-types.js';
import { Safety } from './safety.js';
import type { Headroom } from './sub-agent.js';
import { admitToolCall, type Admission } from './tool-admission.js';
import { ApprovalGate, type DecisionOutcome, decisionProblem } from './tool-approval.js';
import { type PassedDown, SubAgentWaits } from './sub-agent-wait.js';
import { Transcript } from './transcript.js';
import { VerifyGate } from './verify-gate.js';
import { ignoredSignalWarning, withIgnoredSignal, worthAWarning } from './ignored-signals.js';
import { plainUsd } from '../api/money.js';

const NO_LOOP: LoopResponse = { action: 'none' };

/** How much of a provider's failure a timeout's cause quotes. */
const PROVIDER_WHY_CHARS = 500;

/** What the model reads when its finish waits for a steer that arrived while it replied. */
const STEERED_BEFORE_FINISH = 'Not finished: an operator sent a message while you were replying. Read it (next), then finish again or go on.';

/**
 * The whole state of one agent run as a plain state machine: no Temporal, no
 * I/O, time passed in. The workflow applies events to it and reads decisions
 * from it; every policy (when to pause, what a loop or a failed verification
 * means, which tool calls may run) is decided here or in the pure modules it
 * holds, so tests drive it directly.
 */
export class RunState {
  readonly safety: Safety;
  readonly limits: Limits;
  readonly budget: Budget;
  readonly startedAtMs: number;
  private currentStep: number;
  private readonly log: Transcript;
  private tokens: Usage;
  private readonly warningList: string[];
  private lastActivityMs: number;
  private lastToolName: string | null;
  private readonly gate: VerifyGate | null;
  private pendingQuestion: string | null;
  private answers: string[];
  private readonly childIds: string[];
  private readonly executions: number;
  private readonly loops: LoopGuard;
  private ending: Ending | null = null;
  private criticReport: CriticStatus | undefined;
  private criticCostSeen: number;
  private criticDecisionsSeen: number;
  private breakers: BreakerStatus[] | undefined;
  private providerWait: { untilMs: number; why: string } | null = null;
  private readonly checkpointList: Checkpoint[];
  private readonly forkOf: ForkOf | undefined;
  private readonly approvals: ApprovalGate;
  private readonly subAgentWaits = new SubAgentWaits();
  private readonly auditTrail: AuditEntry[];

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
    this.currentStep = snapshot?.step ?? 0;
    this.log = new Transcript(spec.goal, snapshot);
    this.tokens = snapshot?.usage ?? emptyUsage();
    this.warningList = snapshot?.warnings ?? [];
    this.lastActivityMs = snapshot?.lastActivityAtMs ?? nowMs;
    this.lastToolName = snapshot?.lastTool ?? null;
    this.gate = spec.verify ? new VerifyGate(spec.verify, snapshot?.verifyAttempts ?? 0) : null;
    this.pendingQuestion = snapshot?.question ?? null;
    this.answers = snapshot?.answers ?? [];
    this.childIds = snapshot?.children ?? [];
    this.executions = snapshot?.continuedAsNew ?? 0;
    this.loops = new LoopGuard({ stuck: snapshot?.stuck ?? { window: [] }, warned: snapshot?.stuckWarned ?? false });
    this.criticReport = snapshot?.critic;
    this.criticCostSeen = snapshot?.critic?.costUsd ?? 0;
    this.criticDecisionsSeen = snapshot?.critic?.decisions.length ?? 0;
    this.checkpointList = snapshot?.checkpoints ?? [];
    this.forkOf = snapshot?.forkOf;
    this.auditTrail = snapshot?.audit ?? [];
    // Not carried over: the run continues as new only between steps, when no call waits.
    this.approvals = new ApprovalGate(spec.approvals);
  }

  get ended(): boolean {
    return this.ending !== null;
  }

  get state(): RunStateName {
    if (this.ending) return this.ending.status;
    if (this.safety.active) return 'emergency_stopped';
    if (this.budget.exhausted) return 'awaiting_approval';
    if (this.pendingQuestion !== null) return 'blocked';
    if (this.approvals.pending !== null) return 'awaiting_tool_approval';
    const subAgent = this.subAgentWaits.waiting;
    if (subAgent?.question !== undefined) return 'blocked';
    if (subAgent?.pendingToolCall) return 'awaiting_tool_approval';
    return 'running';
  }

  /** Paused: no work runs and the deadline is suspended until a person acts (or maxPause passes). */
  get paused(): boolean {
    const state = this.state;
    return state === 'emergency_stopped' || state === 'awaiting_approval' || state === 'blocked' || state === 'awaiting_tool_approval';
  }

  get step(): number {
    return this.currentStep;
  }

  /** The messages so far; the same array for the run's life, so the transcript query always sees the latest. */
  get transcript(): readonly TranscriptMessage[] {
    return this.log.messages;
  }

  /** Bumped whenever the transcript is rewritten rather than appended to. */
  get transcriptEpoch(): number {
    return this.log.rewrites;
  }

  get warnings(): readonly string[] {
    return this.warningList;
  }

  /** Who sent the last control message applied: the audit trail's newest entry. */
  get lastControlBy(): string | undefined {
    return this.auditTrail.at(-1)?.by;
  }

  get children(): readonly string[] {
    return this.childIds;
  }

  get continuedAsNew(): number {
    return this.executions;
  }

  get lastActivityAtMs(): number {
    return this.lastActivityMs;
  }

  get lastTool(): string | null {
    return this.lastToolName;
  }

  get costUsd(): number {
    return this.budget.spentUsd;
  }

  /** Keeps the deadline suspended exactly while the run is paused. Called after every change. */
  private sync(nowMs: number): void {
    if (this.paused && !this.ended) this.limits.pause(nowMs);
    else this.limits.resume(nowMs);
  }

  /** Ends the run; the first ending wins, so a kill stays a kill. */
  end(ending: Ending, nowMs: number): void {
    if (this.ending) return;
    this.ending = ending;
    this.sync(nowMs);
  }

  /** Ends the run `failed` when it has used every step it may take; says whether it did. */
  endIfOutOfSteps(nowMs: number): boolean {
    if (this.currentStep < this.limits.steps) return false;
    this.end({ status: 'failed', cause: `maxSteps reached (${this.limits.steps})` }, nowMs);
    return true;
  }

  /** The deadline passed. Without a maxRuntime of its own the deadline was the critic's backstop, and the cause says so and how to have more. */
  expire(nowMs: number): void {
    const cause = deadlineCause(this.spec, new Date(this.limits.deadline(nowMs)).toISOString());
    // A run that spent its time on a provider that kept failing says so: "maxRuntime reached" alone would hide the outage.
    const waiting = this.providerWait ? `; it was waiting for its model's provider: ${this.providerWait.why.slice(0, PROVIDER_WHY_CHARS)}` : '';
    this.end({ status: 'timeout', cause: `${cause}${waiting}` }, nowMs);
  }

  /** Nobody acted on a paused run within maxPause. */
  abandonPause(nowMs: number): void {
    this.end({ status: 'timeout', cause: `paused (${this.state}) longer than maxPause with nobody acting` }, nowMs);
  }

  /**
   * Checks a control message against its schema and the run's state. Used as
   * the Update validator (its message goes back to the caller) and before a
   * Signal is applied (a bad signal is logged and dropped).
   */
  validate<N extends ControlName>(name: N, payload: unknown): ControlPayload<N> {
    // No payload at all never reaches the encryption codec: taking it as {} would let anyone with Temporal access clear a stop.
    if (payload === undefined || payload === null) throw new ControlRejected(`${name}: a payload is required (send {} when there is nothing to say)`);
    const parsed = controlSchemas[name].safeParse(payload);
    if (!parsed.success) throw new ControlRejected(`${name}: ${describeIssues(parsed.error)}`);
    if (this.ending) throw new RunEnding(`${name}: run ${this.runId} has already ended (${this.ending.status})`);
    if (name === 'clearEmergency' && !this.safety.active) throw new ControlRejected(ESTOP_NOT_ACTIVE);
    if (name === 'emergencyStop' && this.safety.active) throw new ControlRejected(ESTOP_ALREADY_ACTIVE);
    if (name === 'approve' && !this.budget.exhausted) throw new ControlRejected('approve: the run is not awaiting budget approval');
    if (name === 'answer' && this.pendingQuestion === null && this.subAgentWaits.waiting?.question === undefined)
      throw new ControlRejected('answer: the run is not waiting for an answer');
    if (name === 'decideTool') {
      const pending = this.approvals.pending ?? this.subAgentWaits.waiting?.pendingToolCall ?? null;
      const problem = decisionProblem(pending, parsed.data as ControlPayload<'decideTool'>);
      if (problem) throw new ControlRejected(`decideTool: ${problem}`);
    }
    return parsed.data as ControlPayload<N>;
  }

  /** Applies a validated control message; every control message passes here and leaves an audit entry. Returns a log line describing the effect. */
  apply<N extends ControlName>(name: N, payload: ControlPayload<N>, nowMs: number): string {
    const control = { name, payload } as AppliedControl;
    appendAudit(this.auditTrail, auditEntry(control, nowMs));
    const effect = this.applyControl(control, nowMs);
    this.sync(nowMs);
    return effect;
  }

  private applyControl(control: AppliedControl, nowMs: number): string {
    switch (control.name) {
      case 'steer':
        return `steer queued (${this.log.queueSteer(control.payload.message)} pending)`;
      case 'extend':
        this.limits.extend(control.payload.by, control.payload.steps);
        return `extended: deadline ${new Date(this.limits.deadline(nowMs)).toISOString()}, maxSteps ${this.limits.steps}`;
      case 'kill':
        this.end({ status: 'killed', cause: control.payload.reason }, nowMs);
        return `killed: ${control.payload.reason}`;
      case 'emergencyStop':
        this.safety.trip(control.payload.reason, new Date(nowMs).toISOString());
        return `emergency stop tripped by hand: ${control.payload.reason}`;
      case 'clearEmergency':
        this.safety.clear();
        return 'emergency stop cleared; consecutive errors reset';
      case 'approve': {
        this.budget.approve(control.payload.addBudgetUsd);
        const raised = `budget raised by $${plainUsd(control.payload.addBudgetUsd)} to $${plainUsd(roundUsd(this.budget.budgetUsd ?? 0))}`;
        if (!this.budget.exhausted) return raised;
        // Not enough to go on: the approver is told, in the status the Update answers with, how much more it takes.
        const short = roundUsd(this.budget.spentUsd - (this.budget.budgetUsd ?? 0));
        this.addWarnings([
          `${raised}, still at or below the $${plainUsd(roundUsd(this.budget.spentUsd))} spent: paused; approve more than $${plainUsd(short)} to resume`,
        ]);
        return `${raised}; still paused`;
      }
      case 'answer':
        if (this.pendingQuestion === null) return this.passDown(control);
        this.answers.push(control.payload.text);
        this.pendingQuestion = null;
        return 'question answered';
      case 'decideTool': {
        const decided = `tool call ${control.payload.callId}: ${control.payload.decision}${control.payload.reason ? ` (${control.payload.reason})` : ''}`;
        if (this.approvals.pending === null) return `${this.passDown(control)}: ${decided}`;
        this.approvals.record(control.payload);
        return decided;
      }
    }
  }

  private passDown(control: PassedDown | Omit<PassedDown, 'runId'>): string {
    const to = this.subAgentWaits.waiting?.runId;
    this.subAgentWaits.passDown(control);
    return `passed down to sub-agent ${to}`;
  }

  /** What child `childId` told: it (or one of its own) waits on a person, or no longer does; the run shows the wait as its own. */
  noteSubAgentWait(childId: string, waiting: SubAgentWait | null, nowMs: number): void {
    if (this.ended) return;
    this.subAgentWaits.note(childId, waiting);
    this.sync(nowMs);
  }

  /** The delegate call on `childId` returned: the run no longer waits on it. */
  forgetSubAgentWait(childId: string, nowMs: number): void {
    this.subAgentWaits.forget(childId);
    this.sync(nowMs);
  }

  /** A person's answer or decision to send down to the sub-agent that waits for it, once. */
  takePassedDown(): PassedDown | null {
    return this.subAgentWaits.takePassedDown();
  }

  /** What this run waits on a person for, its own or a sub-agent's, as its parent is told; null when it waits on nobody. */
  personWait(): SubAgentWait | null {
    const state = this.state;
    if (state !== 'blocked' && state !== 'awaiting_tool_approval') return null;
    if (this.pendingQuestion !== null) return { runId: this.runId, question: this.pendingQuestion };
    if (this.approvals.pending) return { runId: this.runId, pendingToolCall: { ...this.approvals.pending } };
    return this.subAgentWaits.waiting;
  }

  /** The wait of a sub-agent this run shows as its own (src/run/sub-agent-wait.ts). */
  get subAgentWait(): SubAgentWait | null {
    return this.ended ? null : this.subAgentWaits.waiting;
  }

  /** Moves queued steers into the transcript, in order, just before an LLM call. */
  takeSteers(): string[] {
    return this.log.takeSteers();
  }

  /** How many steers wait for the next model call. */
  get pendingSteers(): number {
    return this.log.pendingSteers;
  }

  /** The worker's circuit breakers as a call that no provider answered found them: `status` shows the outage. */
  noteBreakers(breakers: BreakerStatus[]): void {
    this.breakers = breakers;
  }

  /** Every provider's circuit is open: the run waits until `untilMs`, sending nothing, and says why. */
  waitForProviders(untilMs: number, why: string): void {
    this.providerWait = { untilMs, why };
  }

  /** Records a model reply as the next step: its message, tokens, cost (which may pause the run) and warnings. */
  recordModelReply(reply: ModelReply, nowMs: number): void {
    this.addWarnings(reply.warnings);
    this.breakers = reply.breakers;
    this.providerWait = null;
    this.currentStep += 1;
    this.tokens = addUsage(this.tokens, reply.usage);
    this.log.push({ role: 'assistant', content: reply.text, ...(reply.toolCalls.length ? { toolCalls: reply.toolCalls } : {}), usage: { ...reply.usage } });
    this.lastActivityMs = nowMs;
    this.addCost(reply.costUsd, nowMs);
  }

  addWarnings(warnings: readonly string[]): void {
    for (const warning of warnings) if (!this.warningList.includes(warning)) this.warningList.push(warning);
  }

  /** A control Signal the run refused: its sender cannot be answered, so the run's warnings say it (ignored-signals.ts). */
  noteIgnoredSignal(name: string, reason: string, nowMs: number): void {
    if (!worthAWarning(reason)) return;
    const next = withIgnoredSignal(this.warningList, ignoredSignalWarning(name, reason, nowMs));
    this.warningList.splice(0, this.warningList.length, ...next);
  }

  /** Adds spend (the model, a summary, the critic, a sub-agent); reaching the budget pauses the run. */
  /** A reply that came after an emergency stop cut its call: paid for, so its tokens and cost count; it is no step, and the call is asked again. */
  recordUnusedReply(reply: Pick<ModelReply, 'usage' | 'costUsd'>, nowMs: number): void {
    this.tokens = addUsage(this.tokens, reply.usage);
    this.addWarnings([
      `a model reply came after the emergency stop cut its call: its $${plainUsd(roundUsd(reply.costUsd))} counts, and the call is asked again after the clear`,
    ]);
    this.addCost(reply.costUsd, nowMs);
  }

  addCost(costUsd: number, nowMs: number): void {
    this.addWarnings(this.budget.add(costUsd).warnings);
    this.sync(nowMs);
  }

  /** A person cleared the stop: the loop guard starts afresh, as the error count does. */
  forgetLoops(): void {
    this.loops.forget();
  }

  /** Whether a tool call may run now (see Admission). */
  admit(call: ToolCall): Admission {
    return admitToolCall(call, this.spec.tools, this.paused ? this.state : null);
  }

  /** Whether a person must decide on this call before it runs (RunSpec `approvals`); `unicode`: how the rules' patterns read (approvalPattern). */
  needsApproval(call: ToolCall, unicode: boolean): boolean {
    return this.approvals.requires(call, unicode);
  }

  /** Holds a call for a person's decision: the run is `awaiting_tool_approval` until `decideTool` comes. */
  holdForApproval(call: ToolCall, nowMs: number): void {
    this.approvals.hold(call, nowMs);
    this.sync(nowMs);
  }

  /** What the decision taken for the held call does to it (run as is, run edited, or denied). */
  takeToolDecision(call: ToolCall): DecisionOutcome {
    return this.approvals.take(call);
  }

  noteToolStart(name: string, nowMs: number): void {
    this.lastToolName = name;
    this.lastActivityMs = nowMs;
  }

  /**
   * Records a tool result for the model. A counted result also feeds the
   * emergency stop and the loop guard; a loop is answered here (a steer, then
   * the end), and the outcome says what happened so the workflow can log it.
   */
  recordToolResult(call: ToolCall, given: ToolResult, nowMs: number, counts = true): ToolOutcome {
    const result = this.approvals.annotate(call.id, given);
    this.log.push({ role: 'tool', toolCallId: call.id, toolName: call.name, content: toolResultText(result), success: result.success });
    this.lastActivityMs = nowMs;
    if (!counts) return { tripped: null, loop: NO_LOOP };
    const tripped = this.recordOutcome(result.success, result.error ?? firstLine(result.output), nowMs);
    if (this.ended) return { tripped, loop: NO_LOOP };
    const loop = this.loops.observe(call, result);
    if (loop.action === 'steer') this.apply('steer', { message: loop.message, audit: { by: 'loop guard', via: 'run' } }, nowMs);
    if (loop.action === 'stop') this.end({ status: 'stuck', cause: loop.cause, pattern: loop.pattern }, nowMs);
    return { tripped, loop };
  }

  /** Counts a failed step that produced no tool result (an LLM call that failed after its retries). */
  recordFailure(error: string, nowMs: number): string | null {
    this.lastActivityMs = nowMs;
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

  /**
   * Whether a finish waits for the steers that arrived while the model was
   * replying: the model reads them at its next call and decides again, so a
   * steer that said "do not finish yet" is not dropped. With no step left to
   * read them in, the run finishes and says what it did not read.
   */
  finishWaitsForSteers(call: ToolCall | undefined, nowMs: number): boolean {
    const waiting = this.log.pendingSteers;
    if (waiting === 0) return false;
    if (this.headroom(nowMs).steps <= 0) {
      this.addWarnings([`${waiting} steer(s) arrived as the run finished on its last step; the model did not read them`]);
      return false;
    }
    if (call) this.recordToolResult(call, { success: false, error: 'not finished', output: STEERED_BEFORE_FINISH }, nowMs, false);
    return true;
  }

  /**
   * The model declared the goal done (`finish`, or a reply with no tool call).
   * Without a verification gate the run completes now; with one, this returns
   * the number of the attempt to run.
   */
  requestFinish(summary: string, call: ToolCall | undefined, nowMs: number): number | null {
    if (this.gate) {
      return this.gate.begin();
    }
    if (call) this.recordToolResult(call, { success: true, output: 'Run finished.' }, nowMs, false);
    this.end({ status: 'completed', summary }, nowMs);
    return null;
  }

  /** Records a verification attempt: a pass completes the run, a failure goes back to the model, the last failure ends it `needs_fix`. */
  recordVerification(outcome: VerifyOutcome, attempt: number, summary: string, call: ToolCall | undefined, nowMs: number): void {
    const verdict = this.gate!.judge(outcome, attempt);
    if (verdict.passed) {
      if (call) this.recordToolResult(call, { success: true, output: 'Verification passed. Run finished.' }, nowMs, false);
      this.end({ status: 'completed', summary, verify: outcome }, nowMs);
      return;
    }
    // Verification has its own attempt budget, so its failures do not count towards the emergency stop.
    if (call) this.recordToolResult(call, { success: false, error: 'verification failed', output: verdict.feedback }, nowMs, false);
    else this.addUserMessage(verdict.feedback, 'verify');
    if (verdict.exhausted) this.end({ status: 'needs_fix', cause: verdict.cause, summary, verify: outcome }, nowMs);
  }

  /** The verification attempt never completed (its worker is gone): it does not count, and the model reads why. */
  recordVerificationLost(notice: string, call: ToolCall | undefined, nowMs: number): void {
    this.gate!.abandon();
    if (call) this.recordToolResult(call, { success: false, interrupted: true, error: notice, output: '' }, nowMs, false);
    else this.addUserMessage(notice, 'notice');
  }

  /**
   * The verification could not be run at all (its workspace is unusable): the
   * attempt does not count, since nothing was verified, but the failure does
   * count towards the emergency stop, so a gate that can never run halts the
   * run for a person rather than spending its steps.
   */
  recordVerificationNotRun(error: string, call: ToolCall | undefined, nowMs: number): ToolOutcome {
    this.gate!.abandon();
    const failure = `verification could not be run: ${error}`;
    if (call) return this.recordToolResult(call, { success: false, error: failure, output: '' }, nowMs);
    this.addUserMessage(failure, 'notice');
    return { tripped: this.recordFailure(failure, nowMs), loop: NO_LOOP };
  }

  /**
   * Gives every call of the last reply still without a result an error
   * result, so the transcript stays one the model can read: a step cut short
   * by an unexpected error leaves them unanswered, and a provider refuses a
   * reply's calls without their results. They do not count: the step's
   * failure counts once.
   */
  answerOpenCalls(error: string, nowMs: number): void {
    for (const call of this.log.openCalls()) this.recordToolResult(call, { success: false, error, output: '' }, nowMs, false);
  }

  /** The model asked a person a question: the run is blocked until an answer comes. */
  ask(question: string, nowMs: number): void {
    this.pendingQuestion = question;
    this.sync(nowMs);
  }

  /** Gives the `ask_user` call the answer that unblocked the run. */
  recordAnswer(call: ToolCall, nowMs: number): void {
    this.recordToolResult(call, { success: true, output: this.answers.shift() ?? '' }, nowMs, false);
  }

  /** Whether to compact before the next call: the context is large, and no recent attempt failed. */
  get compactionDue(): boolean {
    return this.log.compactionDue(this.currentStep, this.spec.limits.maxContextChars);
  }

  /** Swaps in the compacted transcript (same array, so queries see it at once) and counts the summary's cost. */
  recordCompaction(plan: CompactionPlan, summary: { text: string; costUsd: number }, nowMs: number): void {
    this.log.compact(plan, summary.text);
    this.addCost(summary.costUsd, nowMs);
  }

  /**
   * Keeps the transcript small enough to travel whole in a payload (continue-as-new,
   * a resend, the summariser): long old messages are shortened, then old turns
   * dropped. Returns whether it had to; a warning says so.
   */
  boundTranscript(): boolean {
    if (!this.log.fit(MAX_TRANSCRIPT_BYTES)) return false;
    this.addWarnings([`the transcript outgrew ${describeBytes(MAX_TRANSCRIPT_BYTES)} and was shortened to fit Temporal's payload limit`]);
    return true;
  }

  /** Compaction failed: keep the full context and try again a few steps later. */
  recordCompactionFailed(): void {
    this.log.compactionFailed(this.currentStep);
  }

  addUserMessage(content: string, source: 'verify' | 'notice' | 'critic' | 'summary'): void {
    this.log.push({ role: 'user', content, source });
  }

  /** Shows the critic's report in `status` and counts its new cost once; returns the decisions not seen before. */
  recordCriticReport(report: CriticStatus, nowMs: number): string[] {
    this.criticReport = report;
    const cost = report.costUsd ?? 0;
    if (cost > this.criticCostSeen) this.addCost(cost - this.criticCostSeen, nowMs);
    this.criticCostSeen = Math.max(this.criticCostSeen, cost);
    const fresh = report.decisions.slice(this.criticDecisionsSeen).map((d) => d.decision);
    this.criticDecisionsSeen = report.decisions.length;
    return fresh;
  }

  /** What a sub-agent may have: what this run has left. */
  headroom(nowMs: number): Headroom {
    return {
      steps: this.limits.steps - this.currentStep,
      ms: this.limits.remainingMs(nowMs),
      usd: this.spec.limits.budgetUsd !== undefined ? (this.budget.budgetUsd ?? 0) - this.costUsd : undefined,
    };
  }

  /**
   * Records a checkpoint of the workspace (in this run's repository, on the
   * worker polling `queue`) as it is after `step`; the step's last one wins.
   * The baseline (the workspace before the first call) counts as step 0.
   */
  recordCheckpoint(checkpoint: { commit: string; baseline?: string }, queue: string | null, step = this.currentStep): void {
    const list = this.checkpointList;
    if (checkpoint.baseline && !list.length) list.push({ step: 0, commit: checkpoint.baseline, runId: this.runId, queue });
    if (list[list.length - 1]?.step === step) list.pop();
    list.push({ step, commit: checkpoint.commit, runId: this.runId, queue });
  }

  /** Whether the run has a checkpoint of its workspace (its baseline is taken). */
  get hasCheckpoints(): boolean {
    return this.checkpointList.length > 0;
  }

  /** What a fork of this run reads: its step, spec, transcript and checkpoints, as of now. */
  forkSource(): ForkSource {
    return {
      runId: this.runId,
      step: this.currentStep,
      spec: this.spec,
      transcript: this.log.messages.slice(),
      checkpoints: this.checkpointList.slice(),
      holding: this.approvals.pending !== null,
    };
  }

  addChild(childId: string): void {
    this.childIds.push(childId);
  }

  /** A sub-agent's wait, shown as the run's own where the run has none of its own. */
  private subAgentWaitStatus(): Pick<RunStatus, 'question' | 'pendingToolCall' | 'waitingSubAgent'> {
    const wait = this.subAgentWait;
    if (!wait || this.pendingQuestion !== null || this.approvals.pending) return {};
    return {
      waitingSubAgent: wait.runId,
      ...(wait.question !== undefined ? { question: wait.question } : {}),
      ...(wait.pendingToolCall ? { pendingToolCall: { ...wait.pendingToolCall } } : {}),
    };
  }

  status(nowMs: number): RunStatus {
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      runId: this.runId,
      state: this.state,
      step: this.currentStep,
      maxSteps: this.limits.steps,
      deadline: iso(this.limits.deadline(nowMs)),
      asOf: iso(nowMs),
      consecutiveErrors: this.safety.errors,
      maxConsecutiveErrors: this.safety.max,
      // A run that ended while stopped is not held by the stop any more: it ended.
      emergencyStop: this.ended ? noEmergencyStop() : this.safety.status(),
      lastActivityAt: iso(this.lastActivityMs),
      lastTool: this.lastToolName,
      costUsd: roundUsd(this.costUsd),
      budgetUsd: this.budget.budgetUsd === null ? null : roundUsd(this.budget.budgetUsd),
      warnings: [...this.warningList],
      ...(this.ending?.cause ? { cause: this.ending.cause } : {}),
      model: this.spec.model,
      goal: this.spec.goal,
      startedAt: iso(this.startedAtMs),
      usage: { ...this.tokens },
      // An ended run waits for nobody: a question or a held call it ended with is no longer open.
      ...(this.pendingQuestion !== null && !this.ended ? { question: this.pendingQuestion } : {}),
      ...(this.approvals.pending && !this.ended ? { pendingToolCall: { ...this.approvals.pending } } : {}),
      ...this.subAgentWaitStatus(),
      ...(this.criticReport ? { critic: this.ended ? { ...this.criticReport, nextEscalationAt: null } : this.criticReport } : {}),
      ...(this.childIds.length ? { children: [...this.childIds] } : {}),
      ...(this.executions ? { continuedAsNew: this.executions } : {}),
      ...(this.breakers?.length ? { breakers: this.breakers.map((b) => asOf(b, nowMs)) } : {}),
      ...(this.providerWait && !this.ended && nowMs < this.providerWait.untilMs
        ? { waitingForProvider: { until: iso(this.providerWait.untilMs), why: this.providerWait.why } }
        : {}),
      ...(this.forkOf ? { forkOf: this.forkOf } : {}),
      transcriptEpoch: this.transcriptEpoch,
      transcriptLength: this.transcript.length,
      ...(this.auditTrail.length ? { audit: this.auditTrail.map((e) => ({ ...e })) } : {}),
    };
  }

  result(): RunResult {
    if (!this.ending) throw new Error('result() before the run ended');
    return {
      runId: this.runId,
      status: this.ending.status,
      ...(this.ending.summary !== undefined ? { summary: this.ending.summary } : {}),
      steps: this.currentStep,
      costUsd: roundUsd(this.costUsd),
      usage: { ...this.tokens },
      ...(this.ending.cause ? { cause: this.ending.cause } : {}),
      ...(this.ending.verify ? { verify: this.ending.verify } : {}),
      ...(this.ending.pattern ? { pattern: this.ending.pattern } : {}),
    };
  }

  /** The state to carry into the next execution when the run continues as new. */
  carryOver(): RunSnapshot {
    return { ...this.snapshot(), continuedAsNew: this.executions + 1 };
  }

  snapshot(): RunSnapshot {
    const loops = this.loops.snapshot();
    return {
      startedAtMs: this.startedAtMs,
      step: this.currentStep,
      ...this.log.snapshot(),
      usage: this.tokens,
      warnings: this.warningList,
      lastActivityAtMs: this.lastActivityMs,
      lastTool: this.lastToolName,
      verifyAttempts: this.gate?.used ?? 0,
      question: this.pendingQuestion,
      answers: this.answers,
      children: this.childIds,
      safety: this.safety.snapshot(),
      limits: this.limits.snapshot(),
      budget: this.budget.snapshot(),
      continuedAsNew: this.executions,
      stuck: loops.stuck,
      stuckWarned: loops.warned,
      ...(this.criticReport ? { critic: this.criticReport } : {}),
      ...(this.checkpointList.length ? { checkpoints: this.checkpointList } : {}),
      ...(this.forkOf ? { forkOf: this.forkOf } : {}),
      ...(this.auditTrail.length ? { audit: this.auditTrail } : {}),
    };
  }
}

function firstLine(text: string): string {
  return (text.split('\n', 1)[0] ?? '').slice(0, 200);
}

function roundUsd(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

/** A breaker as it stands at `nowMs`: once its open window has passed, the next call is a probe (half-open). */
function asOf(breaker: BreakerStatus, nowMs: number): BreakerStatus {
  if (breaker.state !== 'open' || !breaker.openUntil || Date.parse(breaker.openUntil) > nowMs) return breaker;
  return { provider: breaker.provider, state: 'half_open', openUntil: null };
}
