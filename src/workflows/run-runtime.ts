import { ActivityFailure, CancellationScope, isCancellation, log, patched, sleep, TimeoutFailure, upsertMemo, workflowInfo } from '@temporalio/workflow';
import type { LlmReply } from '../activities/llm.js';
import type { ToolCallInput, ToolHeartbeat } from '../activities/tools.js';
import { signalQuietly } from './signal-quietly.js';
import type { ControlName } from '../api/control.js';
import { childEmergencySignal, childWaitSignal } from '../api/messages.js';
import type { RunSpec } from '../api/spec.js';
import { FILE_ONLY_TOOLS } from '../api/tools.js';
import type { ToolCall, ToolResult, VerifyOutcome } from '../api/types.js';
import { FINAL_STATUS_MEMO } from '../api/memo.js';
import { MAX_TRANSCRIPT_BYTES } from '../api/payload-limits.js';
import type { CompactionPlan } from '../run/compaction.js';
import { fitTranscript } from '../run/transcript-fit.js';
import { systemPromptOf, withOutputNote } from '../run/prompt.js';
import { parentSender } from '../run/sub-agent.js';
import type { RunState } from '../run/run-state.js';
import type { PassedDown } from '../run/sub-agent-wait.js';
import {
  checkpointSummary,
  claimSummary,
  compactionSummary,
  holderCheckSummary,
  modelCallSummary,
  toolCallSummary,
  verificationSummary,
} from '../run/summaries.js';
import { activityProxies, claimWorkspace, claimWorkspaceHere, metricsSink, type RunActivities } from './activity-stubs.js';
import { leanHistory, patchedOrLean } from './lean-history.js';
import { createVisibility } from './visibility.js';

const HALTED_TOOL = 'halted: an emergency stop killed this command while it ran; it may have done part of its work. Check before running it again.';
const HALTED_BEFORE_TOOL =
  'halted: an emergency stop came before this call ran, and it did not run. Call it again once the run resumes, if it is still needed.';
/** How long the worker holding the workspace may go unheard before a call bound to it first asks whether it is still there. */
const HOLDER_QUIET_MS = 60_000;
/** What the model reads when an emergency stop killed its verification: the attempt does not count. */
export const HALTED_VERIFICATION = 'halted: an emergency stop killed the verification while it ran. Call finish again once the run resumes.';

/** The local activity's answer when this worker does not hold the workspace. */
const NOT_HERE = Symbol('not here');

/**
 * What a verification attempt came to: an outcome, a lost worker (with the notice for the model), a verification that
 * could not be run (why), or nothing (interrupted).
 */
export type VerifyAttempt = { outcome: VerifyOutcome } | { lost: string } | { notRun: string } | undefined;

/**
 * The runtime of one run: where its work runs and how it is interrupted.
 * It binds the run to a live worker (and rebinds when that worker dies),
 * runs every activity in a scope a kill or the deadline can cancel, sends
 * the model only the transcript the worker has not seen, and publishes the
 * run's state (search attributes, memo, metrics, a parent's stop signal).
 * Decisions stay in `RunState`: this class only carries them out.
 */
/** What a run does to the sub-agents it waits on when it is killed, stopped or cleared (src/workflows/delegation.ts). */
export interface SubAgentControl {
  killChildren(reason: string): void;
  /** Sends a person's answer or decision down to the sub-agent that waits for it. */
  passDown(message: PassedDown): void;
  stopChildren(reason: string): void;
  clearChildren(): void;
}

export class RunRuntime {
  readonly runId: string;
  readonly metrics = metricsSink();
  private acts: RunActivities;
  private workspaceQueue: string | null;
  /** How much of the transcript the bound worker already holds (it is sent as a delta). */
  private sent = { epoch: -1, length: 0 };
  private inFlight: CancellationScope | null = null;
  /** The in-flight scope the run itself cancelled (a kill or an emergency stop), as opposed to Temporal cancelling the run. */
  private cutShort: CancellationScope | null = null;
  private readonly upsertVisibility: () => void;
  private warningsShown: number;
  private killRequestedAt: number | null = null;
  /** Workflow time of the last Update that was applied: its answer must not share a workflow task with the run's end. */
  private updateAppliedAt: number | null = null;
  /** The wait this run last told its parent of (personWait as a key); '' for none. */
  private waitReported = '';
  /** Workflow time the worker holding the workspace last answered; null once the run has waited on a pause since. */
  private holderHeardAt: number | null = Date.now();

  /** The run whose workspace the tools use: its own, or its parent's for a sub-agent. */
  readonly workspaceOf: string;

  constructor(
    readonly spec: RunSpec,
    readonly run: RunState,
    workspaceQueue: string | null,
    workspaceOf?: string,
  ) {
    this.runId = run.runId;
    this.workspaceOf = workspaceOf ?? run.runId;
    this.workspaceQueue = workspaceQueue;
    this.acts = activityProxies(spec, workspaceQueue);
    this.upsertVisibility = createVisibility(run);
    this.warningsShown = run.warnings.length;
  }

  /** The task queue of the worker holding this run's workspace; null when workspaces are shared. */
  get queue(): string | null {
    return this.workspaceQueue;
  }

  /**
   * A tool call whose worker went away: the last heartbeat of its first attempt says whether, and for how long, it
   * ran, and what it printed. It is not run again, because it may have side effects: the model decides.
   */
  private async toolLostWithWorker(err: ActivityFailure): Promise<ToolResult> {
    const last = (err.cause as TimeoutFailure).lastHeartbeatDetails as ToolHeartbeat | undefined;
    const ran = last?.elapsedMs !== undefined ? ` after running for ${Math.round(last.elapsedMs / 1000)}s` : last ? ' after it had started' : '';
    const inFlight = last
      ? `the call in flight stopped with it${ran}, and was not run again because it may have side effects; its output so far is below`
      : 'the call in flight may have started before the worker went, and was not run again because it may have side effects';
    return { success: false, interrupted: true, error: await this.rebind(inFlight), output: last?.tail ?? '' };
  }

  /** Binds the run's workspace-bound activities (and its model calls) to the worker that answers the claim. */
  async bindWorkspace(): Promise<void> {
    const claim = leanHistory() ? claimWorkspaceHere : claimWorkspace;
    const { taskQueue } = await claim.executeWithOptions({ summary: claimSummary(this.runId) }, []);
    this.workspaceQueue = taskQueue;
    this.acts = activityProxies(this.spec, taskQueue);
    this.sent = { epoch: -1, length: 0 };
    this.holderHeardAt = Date.now();
  }

  /**
   * A model call goes to the worker that ran the run's last workflow task,
   * which is the workspace's while that worker lives: answered by another, the
   * run moved, and the workspace's worker may be gone (it died during the call).
   */
  private heardOrNot(answeredBy: string | null | undefined): void {
    if (answeredBy === undefined || this.workspaceQueue === null) return;
    if (answeredBy === this.workspaceQueue) this.holderHeardAt = Date.now();
    else this.holderMayHaveGone();
  }

  /** The run waited on a person or a stop: its workspace's worker may have gone meanwhile. */
  holderMayHaveGone(): void {
    this.holderHeardAt = null;
  }

  /**
   * Before a call bound to the workspace's worker, after a pause or a long
   * quiet, asks that worker whether it is still there. A call sent to a gone
   * worker's queue would wait out the holder's wait and then could not tell
   * the model whether it had started. Returns the notice when the run moved
   * to another worker, and undefined when a kill, the deadline or a stop cut
   * the question short.
   */
  private async confirmHolder(): Promise<{ moved?: string } | undefined> {
    const heard = this.holderHeardAt;
    if (this.workspaceQueue === null || (heard !== null && Date.now() - heard <= HOLDER_QUIET_MS)) return {};
    // patched(): histories recorded before sent the call without asking.
    if (!patched('confirm-holder')) return {};
    try {
      const answered = await this.interruptible(() => this.acts.confirmHolder.executeWithOptions({ summary: holderCheckSummary(this.runId) }, []));
      if (answered === undefined) return undefined;
    } catch (err) {
      if (this.workerGone(err))
        return { moved: await this.rebind('nothing of this run was running there, and the call waiting to run went to the new worker') };
      // The holder answered, if only to say it does not know the question (a worker of an earlier version).
      if (!(err instanceof ActivityFailure)) throw err;
    }
    this.holderHeardAt = Date.now();
    return {};
  }

  /** Whether a failure says the worker holding the workspace is gone: it did not pick up work in time. */
  workerGone(err: unknown): boolean {
    return (
      this.workspaceQueue !== null && err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_START'
    );
  }

  /** Binds the run to a live worker; returns the notice telling the model what was lost (`inFlight`: what became of the call). */
  async rebind(inFlight = 'the model call in flight was lost, and is asked again'): Promise<string> {
    const lost = this.workspaceQueue;
    await this.bindWorkspace();
    log.warn(`worker ${lost} is gone; the run moved to ${this.workspaceQueue}`, { runId: this.runId });
    // Whether the new worker sees the old files depends on its disk (a worker restarted on the same machine does): the model checks.
    return `interrupted: the worker that held this run's workspace is gone; ${inFlight}. The run moved to another worker: the files written before are there only if it shares the old worker's disk (a worker restarted on the same machine does; another machine starts with an empty workspace). Check the workspace, recreate what is missing, and go on.`;
  }

  /** Runs work that a kill, the deadline or an emergency stop may cut short; undefined when it was. */
  async interruptible<T>(work: () => Promise<T>): Promise<T | undefined> {
    const scope = new CancellationScope();
    this.inFlight = scope;
    try {
      return await scope.run(work);
    } catch (err) {
      return this.cutShortBy(err, scope);
    } finally {
      this.inFlight = null;
      this.cutShort = null;
    }
  }

  /**
   * A model call that a kill, the deadline or an emergency stop may cut short; undefined when it was. Cut short,
   * it is not waited for; but a reply that still comes after an emergency stop cut it (the provider answered
   * before the cancel reached the worker) was paid for, and what it cost counts. patched(): runs recorded
   * before let such a reply go uncounted.
   */
  async interruptibleModelCall(call: () => Promise<LlmReply>): Promise<LlmReply | undefined> {
    const scope = new CancellationScope();
    this.inFlight = scope;
    const settled = scope.run(call);
    // Once the call is cut short nothing waits for it: its own end must not go unhandled.
    settled.catch(() => undefined);
    try {
      return await Promise.race([settled, scope.cancelRequested]);
    } catch (err) {
      if (isCancellation(err) && this.run.paused && !this.run.ended && patched('late-reply-counted'))
        void settled.then((reply) => this.countUnusedReply(reply)).catch(() => undefined);
      return this.cutShortBy(err, scope);
    } finally {
      this.inFlight = null;
      this.cutShort = null;
    }
  }

  /** Undefined for work that a kill or the deadline (the run has ended) or an emergency stop (it is paused) cut short; else rethrows. */
  private cutShortBy(err: unknown, scope: CancellationScope): undefined {
    if (isCancellation(err) && (this.run.ended || this.run.paused)) return undefined;
    // A tool acknowledges its cancellation only once its process tree is gone, which can be after the stop was cleared.
    if (isCancellation(err) && scope === this.cutShort && patchedOrLean('halted-call-acknowledged-after-clear')) return undefined;
    throw err;
  }

  /** A reply the run will not use (an emergency stop cut its call) still cost what it cost. */
  private countUnusedReply(reply: LlmReply): void {
    this.run.recordUnusedReply(reply, Date.now());
    this.publish();
  }

  /** Cancels the work in flight; the run must already have its ending, so the work reads as interrupted. */
  cancelInFlight(): void {
    this.cutShort = this.inFlight;
    this.inFlight?.cancel();
  }

  /** Upserts the search attributes that changed. */
  publish(): void {
    this.upsertVisibility();
  }

  /** Warnings go into the memo so they are in the history and the Temporal UI, not only in `status`. */
  publishWarnings(): void {
    const { warnings } = this.run;
    if (warnings.length === this.warningsShown) return;
    for (const warning of warnings.slice(this.warningsShown)) log.warn(`warning: ${warning}`, { runId: this.runId });
    this.warningsShown = warnings.length;
    upsertMemo({ warnings: warnings.slice(-20) });
  }

  /** The run's status as it ends, in the memo: a closed run's status is then read without a worker replaying the run. */
  publishFinalStatus(): void {
    // patched(): runs recorded before it replay without the memo's event.
    if (patchedOrLean('final-status-memo')) upsertMemo({ [FINAL_STATUS_MEMO]: this.run.status(Date.now()) });
  }

  /** Logs a trip of the emergency stop (and tells a parent run) when `reason` is set. */
  noteTrip(reason: string | null): void {
    if (!reason) return;
    log.error(`emergency stop tripped: ${reason}`, { runId: this.runId, consecutiveErrors: this.run.safety.errors });
    this.metrics.emergencyStop('tripped', 'threshold');
    this.tellParentStopped(reason);
  }

  /** A run started while the fleet is stopped starts stopped. */
  startStopped(fleetReason: string): void {
    this.run.apply('emergencyStop', { reason: `fleet: ${fleetReason}`, audit: { by: 'fleet emergency stop', via: 'run' } }, Date.now());
    this.metrics.emergencyStop('tripped', 'fleet');
  }

  /**
   * Carries out what an applied control message asks of the runtime: a kill
   * cancels in-flight work and kills sub-agents; an emergency stop cancels it
   * and stops them, and its clear lets them go on.
   */
  controlApplied(name: ControlName, via: 'signal' | 'update', children: SubAgentControl): void {
    this.metrics.control(name, via);
    if (via === 'update') this.updateAppliedAt = Date.now();
    if (name === 'kill') {
      this.killRequestedAt = Date.now();
      children.killChildren(this.run.status(Date.now()).cause ?? 'killed');
      this.cancelInFlight();
    }
    if (name === 'emergencyStop') {
      this.metrics.emergencyStop('tripped', 'manual');
      const reason = this.run.safety.status().reason ?? 'manual';
      // A stop the parent sent needs no report back: the parent is stopped already, and waits on this run.
      if (!this.stoppedByParent()) this.tellParentStopped(reason);
      children.stopChildren(reason);
      // An emergency stop halts all operations: the tool (or model call) in flight dies now, not when it ends.
      if (patchedOrLean('estop-halts-in-flight')) this.cancelInFlight();
    }
    if (name === 'clearEmergency') {
      this.metrics.emergencyStop('cleared', 'manual');
      children.clearChildren();
    }
    const passed = this.run.takePassedDown();
    if (passed) children.passDown(passed);
    this.reportWaitToParent();
    this.publish();
  }

  /**
   * Lets the workflow task that answers an Update complete before the run
   * closes. The server turns back a task that closes the run while new events
   * wait (an activity that completed as the run ended: UnhandledCommand) and
   * drops the Updates it answered; a task that only answers them and starts a
   * timer is never turned back, so the answer stands and the close is retried
   * alone. Workflow time moves only between tasks, so an Update applied now
   * is one this task answers.
   */
  async answerUpdatesBeforeClosing(): Promise<void> {
    if (this.updateAppliedAt === Date.now() && leanHistory()) await sleep(1);
  }

  /** Workflow time from the kill to now, once in-flight work has been cancelled and acknowledged. */
  killLatencyMs(): number | null {
    return this.killRequestedAt === null ? null : Date.now() - this.killRequestedAt;
  }

  /** Records a tool result and logs what it set off (a trip, a loop steer, a stuck ending). */
  recordToolResult(call: ToolCall, result: ToolResult, counts = true): void {
    const { tripped, loop } = this.run.recordToolResult(call, result, Date.now(), counts);
    this.noteTrip(tripped);
    if (loop.action === 'steer') log.warn(`stuck loop detected (${loop.kind}); steering the model`, { runId: this.runId, pattern: loop.pattern });
  }

  /** Where a workspace activity runs: the spec's directory, else the workspace of `workspaceOf` (a sub-agent's parent). */
  private workspaceInput(): { runId: string; workspace?: string; workspaceOf?: string } {
    return { runId: this.runId, workspace: this.spec.workspace, ...(this.workspaceOf !== this.runId ? { workspaceOf: this.workspaceOf } : {}) };
  }

  private stoppedByParent(): boolean {
    const parent = workflowInfo().parent;
    return parent !== undefined && this.run.lastControlBy === parentSender(parent.workflowId);
  }

  /**
   * Tells a parent run what this run, or one of its sub-agents, waits on a
   * person for, when that changed: the parent shows the wait as its own and
   * passes the answer or decision down (src/run/sub-agent-wait.ts).
   */
  reportWaitToParent(): void {
    const parent = workflowInfo().parent;
    if (!parent) return;
    const waiting = this.run.personWait();
    const key = waiting ? JSON.stringify([waiting.runId, waiting.pendingToolCall?.callId, waiting.question]) : '';
    // patched(): sub-agents recorded before told their parent nothing of their waits.
    if (key === this.waitReported || !patched('sub-agent-waits-shown')) return;
    this.waitReported = key;
    void signalQuietly(parent.workflowId, childWaitSignal, { childId: this.runId, waiting }, `tell parent ${parent.workflowId} of a wait`);
  }

  /** A delegated run tells its parent at once when it stops, so the parent's delegate call can return. */
  private tellParentStopped(reason: string): void {
    const parent = workflowInfo().parent;
    if (!parent) return;
    const report = { childId: this.runId, reason, costUsd: this.run.costUsd };
    void signalQuietly(parent.workflowId, childEmergencySignal, report, `tell parent ${parent.workflowId} of the emergency stop`);
  }

  /**
   * Asks `model` for the next step, sending only the messages the bound worker
   * has not seen (all of them when `resend`). Throws the activity's failure.
   */
  async callModel(model: string, resend: boolean, fallbackNext = false): Promise<LlmReply | undefined> {
    const { run, spec } = this;
    const length = run.transcript.length;
    const from = !resend && this.sent.epoch === run.transcriptEpoch && this.sent.length <= length ? this.sent.length : 0;
    const input = {
      runId: this.runId,
      step: run.step,
      model,
      // The system prompt goes with the whole transcript only; the worker keeps it with its copy (it may be 100s of KiB).
      ...(from === 0 ? { system: systemPromptOf(spec) } : { systemCached: true }),
      context: { epoch: run.transcriptEpoch, from, messages: run.transcript.slice(from), length },
      tools: spec.tools,
      timeoutMs: spec.limits.llmTimeout,
      ...(fallbackNext ? { fallbackNext } : {}),
    };
    const reply = await this.interruptibleModelCall(() => this.acts.callModel.executeWithOptions({ summary: modelCallSummary(model, run.step) }, [input]));
    if (reply) this.sent = { epoch: run.transcriptEpoch, length };
    if (reply) this.heardOrNot(reply.answeredBy);
    return reply;
  }

  /** Summarises the middle of a compaction plan. Throws the activity's failure. */
  summarize(plan: CompactionPlan): Promise<{ text: string; costUsd: number } | undefined> {
    const { run, spec } = this;
    // The turns to summarise may be far larger than the model's context: they are sent shortened to fit a payload.
    const transcript = fitTranscript(plan.middle, MAX_TRANSCRIPT_BYTES).messages;
    const input = { runId: this.runId, step: run.step, model: spec.model, goal: spec.goal, transcript, timeoutMs: spec.limits.llmTimeout };
    return this.interruptible(() => this.acts.summarizeTranscript.executeWithOptions({ summary: compactionSummary(spec.model, plan.middle.length) }, [input]));
  }

  /**
   * Runs a workspace tool. Its failures are results; a lost worker is a result with the notice;
   * an emergency stop that killed it is a "halted" result; undefined when the run ended.
   */
  async runTool(call: ToolCall): Promise<ToolResult | undefined> {
    const input = { ...this.workspaceInput(), call, timeoutMs: this.spec.limits.toolTimeout, sandbox: this.spec.sandbox };
    try {
      const holder = await this.confirmHolder();
      if (!holder) return this.run.ended ? undefined : { success: false, interrupted: true, error: HALTED_BEFORE_TOOL, output: '' };
      const here = await this.runFileToolHere(input);
      const result =
        here !== NOT_HERE ? here : await this.interruptible(() => this.acts.runTool.executeWithOptions({ summary: toolCallSummary(call) }, [input]));
      if (result?.warnings) this.run.addWarnings(result.warnings);
      if (result?.checkpoint) this.run.recordCheckpoint(result.checkpoint, this.workspaceQueue);
      if (result) this.holderHeardAt = Date.now();
      if (result && holder.moved) return withOutputNote(result, holder.moved);
      if (result || this.run.ended) return result;
      return { success: false, interrupted: true, error: HALTED_TOOL, output: '' };
    } catch (err) {
      if (this.workerGone(err)) return this.toolLostWithWorker(err as ActivityFailure);
      // Temporal cancelled the run under the tool: that ends the run `cancelled`, it is not a failed call that counts as an error.
      if (isCancellation(err) && patchedOrLean('cancellation-is-not-a-tool-failure')) throw err;
      if (!(err instanceof ActivityFailure)) throw err;
      return { success: false, error: `tool could not be run: ${err.cause?.message ?? err.message}`, output: '' };
    }
  }

  /**
   * Carries out a delegated call between two checkpoints of the workspace, as
   * the tools that change files take their own: a fork at this step then has
   * the files the sub-agent left. A checkpoint that fails is a warning.
   */
  async betweenCheckpoints(call: ToolCall, delegate: () => Promise<ToolResult>): Promise<ToolResult> {
    // patched(): runs recorded before took no checkpoint around a delegated call.
    if (!patched('delegate-checkpoints')) return delegate();
    const input = { ...this.workspaceInput(), call };
    const baseline = this.run.hasCheckpoints
      ? null
      : await this.checkpointOrWarn(() => this.acts.checkpointBeforeCall.executeWithOptions({ summary: checkpointSummary(call, 'before') }, [input]));
    const result = await delegate();
    // A sub-agent may work for long: its parent's workspace worker may have gone meanwhile.
    const holder = this.run.ended ? undefined : await this.confirmHolder();
    if (!holder) return result;
    const after = await this.checkpointOrWarn(() =>
      this.acts.checkpointAfterCall.executeWithOptions({ summary: checkpointSummary(call, 'after') }, [{ ...input, baseline: baseline ?? null }]),
    );
    if (after?.warnings) this.run.addWarnings(after.warnings);
    if (after?.checkpoint) this.run.recordCheckpoint(after.checkpoint, this.workspaceQueue);
    return holder.moved ? withOutputNote(result, holder.moved) : result;
  }

  private async checkpointOrWarn<T>(work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await this.interruptible(work);
    } catch (err) {
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      this.run.addWarnings([`workspace checkpoint failed: ${err.cause?.message ?? err.message}`]);
      return undefined;
    }
  }

  /**
   * A file-only tool runs as a local activity when the worker holding this
   * workflow task holds the workspace: no dispatch, no round trip. Anywhere
   * else, or if it fails, the ordinary activity runs it (docs/architecture.md).
   */
  private async runFileToolHere(input: ToolCallInput): Promise<ToolResult | undefined | typeof NOT_HERE> {
    // patched(): histories recorded before ran every tool as an ordinary activity.
    if (!FILE_ONLY_TOOLS.has(input.call.name) || !patchedOrLean('local-file-tools')) return NOT_HERE;
    try {
      const outcome = await this.interruptible(() =>
        this.acts.runFileToolHere.executeWithOptions({ summary: toolCallSummary(input.call) }, [{ ...input, workspaceQueue: this.workspaceQueue }]),
      );
      return outcome === undefined ? undefined : 'ran' in outcome ? outcome.ran : NOT_HERE;
    } catch (err) {
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      log.warn(`file tool ${input.call.name} failed as a local activity; the tool activity runs it: ${err.cause?.message ?? err.message}`, {
        runId: this.runId,
      });
      return NOT_HERE;
    }
  }

  /** Runs the verification command for `attempt`. */
  async verify(attempt: number): Promise<VerifyAttempt> {
    const { spec } = this;
    const command = spec.verify!.command;
    const input = { ...this.workspaceInput(), command, timeoutMs: spec.limits.toolTimeout, attempt, sandbox: spec.sandbox };
    try {
      const holder = await this.confirmHolder();
      // The model has not seen the workspace on its new worker: it checks it before it asks for the verification again.
      if (!holder || holder.moved) return holder && { lost: holder.moved! };
      const outcome = await this.interruptible(() => this.acts.runVerification.executeWithOptions({ summary: verificationSummary(command, attempt) }, [input]));
      if (outcome) this.holderHeardAt = Date.now();
      return outcome && { outcome };
    } catch (err) {
      if (this.workerGone(err)) return { lost: await this.rebind('the verification in flight was lost, and does not count') };
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      // As a tool that could not be run: the model reads why, and the failure counts.
      return { notRun: err.cause?.message ?? err.message };
    }
  }
}
