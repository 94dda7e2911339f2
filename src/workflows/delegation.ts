import {
  ApplicationFailure,
  ChildWorkflowFailure,
  condition,
  log,
  ParentClosePolicy,
  patched,
  type SignalDefinition,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import { signalQuietly } from './signal-quietly.js';
import { childEmergencySchema, childWaitSchema, payloadProblem } from '../api/message-schemas.js';
import { childEmergencySignal, childWaitSignal, controlSignals } from '../api/messages.js';
import type { ToolArgs } from '../api/tools.js';
import type { ChildEmergency, RunResult, ToolCall, ToolResult } from '../api/types.js';
import { type ControlMessage, type ControlName, fitReason } from '../api/control.js';
import {
  abandonedSubAgentResult,
  lostSubAgentResult,
  parentSender,
  stoppedSubAgentResult,
  subAgentId,
  subAgentResult,
  subAgentSpec,
} from '../run/sub-agent.js';
import type { PassedDown } from '../run/sub-agent-wait.js';
import { patchedSinceInterceptorsAlways } from './lean-history.js';
import type { RunRuntime, SubAgentControl } from './run-runtime.js';

type ChildOutcome = { result: RunResult } | { error: unknown };
/** `ended`: how the child ended when the run waited for it after its kill. */
type ChildEnd = ChildOutcome | { stopped: ChildEmergency } | { abandoned: true; ended?: ChildOutcome };

/**
 * How long a killed run waits for the sub-agents it told to die before it
 * closes. Each cancels its own tools and ends `killed`, its search attributes
 * current and its cost counted in the parent's; one that cannot (no worker
 * takes its task) is ended by the parent close policy.
 */
const KILLED_CHILD_WAIT = '10s';

/** The children that told this run they tripped their emergency stop, by child id. */
function listenToChildEmergencies(runId: string): Map<string, ChildEmergency> {
  const stopped = new Map<string, ChildEmergency>();
  setHandler(childEmergencySignal, (payload: unknown) => {
    // Anyone who reaches Temporal can send this: a bad report is ignored, never a failed workflow task.
    const report = childEmergencySchema.safeParse(payload);
    if (!report.success) return log.warn(`ignored childEmergency signal: ${payloadProblem(report.error)}`, { runId });
    stopped.set(report.data.childId, report.data);
  });
  return stopped;
}

/**
 * A child this run waits on tells it what it waits on a person for: the run
 * shows the wait as its own (pausing, its deadline suspended) and tells its
 * own parent in turn.
 */
function listenToChildWaits(rt: RunRuntime, active: ReadonlySet<string>): void {
  setHandler(childWaitSignal, (payload: unknown) => {
    // Anyone who reaches Temporal can send this: a bad report, or one from a run this one does not wait on, is ignored.
    const report = childWaitSchema.safeParse(payload);
    if (!report.success) return log.warn(`ignored childWait signal: ${payloadProblem(report.error)}`, { runId: rt.runId });
    if (!active.has(report.data.childId)) return log.warn(`ignored childWait signal from ${report.data.childId}: not a sub-agent this run waits on`);
    rt.run.noteSubAgentWait(report.data.childId, report.data.waiting, Date.now());
    rt.reportWaitToParent();
    rt.publish();
  });
}

/**
 * Sub-agents: the `delegate` tool runs a child `agentRun` with limits no larger
 * than what the parent has left. A child that trips its emergency stop tells
 * the parent at once, and the parent's call returns `emergency_stop` while the
 * child stays stopped for an operator. A parent that is killed kills its children.
 */
export class Delegation implements SubAgentControl {
  /** The children that told this run they tripped their emergency stop, by child id. */
  private readonly stopped: Map<string, ChildEmergency>;
  /** The children this run waits on now. */
  private readonly active = new Set<string>();

  constructor(private readonly rt: RunRuntime) {
    this.stopped = listenToChildEmergencies(rt.runId);
    listenToChildWaits(rt, this.active);
  }

  async delegate(call: ToolCall, args: ToolArgs<'delegate'>): Promise<ToolResult> {
    const { rt } = this;
    const { run } = rt;
    const childId = subAgentId(rt.runId, run.step, call.id, run.children.length);
    run.addChild(childId);
    this.active.add(childId);
    rt.publish();
    try {
      const ended = await this.awaitChild(childId, args);
      if ('abandoned' in ended) {
        if (ended.ended) run.addCost(spentBy(ended.ended), Date.now());
        return abandonedSubAgentResult(childId, run.state);
      }
      if ('stopped' in ended) {
        run.addCost(ended.stopped.costUsd, Date.now());
        log.warn(`delegated run ${childId} tripped its emergency stop: ${ended.stopped.reason}`, { runId: rt.runId });
        return stoppedSubAgentResult(ended.stopped);
      }
      const { tool, costUsd } = outcomeOf(childId, ended);
      run.addCost(costUsd, Date.now());
      return tool;
    } finally {
      this.active.delete(childId);
      run.forgetSubAgentWait(childId, Date.now());
      rt.reportWaitToParent();
      rt.publish();
    }
  }

  /** A person answered, or decided, for the sub-agent that waits: the message goes to it as they sent it. */
  passDown({ runId, name, payload }: PassedDown): void {
    void signalQuietly(runId, controlSignals[name] as SignalDefinition<[unknown]>, payload, `pass ${name} down to sub-agent ${runId}`);
  }

  /** The parent was killed: so are its children. */
  killChildren(reason: string): void {
    this.tellChildren({ name: 'kill', payload: { reason: fitReason(`parent killed: ${reason}`) } });
  }

  /**
   * The parent was stopped: so are the children it waits on, as a stopped
   * run has nothing executing. patched(): recorded stops replay without it.
   */
  stopChildren(reason: string): void {
    if (this.active.size && patched('estop-reaches-sub-agents'))
      this.tellChildren({ name: 'emergencyStop', payload: { reason: fitReason(`parent emergency-stopped: ${reason}`) } });
  }

  /** The parent's stop was cleared: its children go on too (one not stopped refuses the clear, which changes nothing). */
  clearChildren(): void {
    if (this.active.size && patched('estop-reaches-sub-agents')) this.tellChildren({ name: 'clearEmergency', payload: {} });
  }

  /**
   * Starts the child and waits for whichever comes first: its end, its emergency stop, or this run's end (its
   * deadline, while the child waits on a person with its own deadline suspended): the run then closes, and its
   * parent close policy ends the child, so nothing of it runs after its parent has ended.
   */
  private async awaitChild(childId: string, args: ToolArgs<'delegate'>): Promise<ChildEnd> {
    const { rt } = this;
    // patched(): runs recorded before waited for the child whatever became of the run.
    const endsWithRun = patchedSinceInterceptorsAlways('delegate-ends-with-run');
    const handle = await startChild('agentRun', {
      workflowId: childId,
      // The child works in this run's workspace, on the worker that holds it (the delegate tool promises so).
      args: [
        // patched(): only runs with approvals take the new path, and their histories from before it replay unchanged.
        subAgentSpec(rt.spec, args, rt.run.headroom(Date.now()), { keepApprovals: Boolean(rt.spec.approvals?.length) && patched('sub-agent-approvals') }),
        { workspaceQueue: rt.queue, workspaceOf: rt.workspaceOf },
      ],
      // A parent that ends takes its children with it: none outlives it unnoticed.
      parentClosePolicy: ParentClosePolicy.TERMINATE,
    });
    let outcome: ChildOutcome | undefined;
    const settled = (handle.result() as Promise<RunResult>).then(
      (r) => (outcome = { result: r }),
      (err: unknown) => (outcome = { error: err }),
    );
    return Promise.race<ChildEnd>([
      settled,
      condition(() => this.stopped.has(childId)).then(() => ({ stopped: this.stopped.get(childId)! })),
      ...(endsWithRun ? [condition(() => rt.run.ended).then(() => this.abandon(() => outcome))] : []),
    ]);
  }

  /**
   * The run ended while the child ran. A kill told the child to die: the run
   * waits a while for it to end (patched(): recorded kills closed at once), so
   * that nothing of it runs on and what it spent counts.
   */
  private async abandon(outcome: () => ChildOutcome | undefined): Promise<ChildEnd> {
    if (this.rt.run.state === 'killed' && patched('killed-run-awaits-sub-agents')) await condition(() => outcome() !== undefined, KILLED_CHILD_WAIT);
    const ended = outcome();
    return ended ? { abandoned: true, ended } : { abandoned: true };
  }

  /** Sends a control message, signed by this run, to every child it waits on. */
  private tellChildren<N extends ControlName>(message: ControlMessage<N>): void {
    for (const childId of this.active) {
      const payload = { ...message.payload, audit: { by: parentSender(this.rt.runId), via: 'run' } };
      void signalQuietly(childId, controlSignals[message.name] as SignalDefinition<[unknown]>, payload, `send ${message.name} to sub-agent ${childId}`);
    }
  }
}

/**
 * A child that ended in any other state than completed carries its RunResult
 * in its failure. One that ended without it (terminated, timed out, refused
 * by the server) is a failed call the model sees, never an error of this
 * run: a step with no tool result would break every later model call.
 */
function outcomeOf(childId: string, ended: ChildOutcome): { tool: ToolResult; costUsd: number } {
  if ('result' in ended) return { tool: subAgentResult(childId, ended.result), costUsd: ended.result.costUsd };
  const { error } = ended;
  const carried = carriedResult(error);
  if (carried) return { tool: subAgentResult(childId, carried), costUsd: carried.costUsd };
  if (!(error instanceof ChildWorkflowFailure)) throw error;
  return { tool: lostSubAgentResult(childId, error.cause?.message ?? error.message), costUsd: 0 };
}

/** The RunResult a child that ended other than completed carries in its failure, if any. */
function carriedResult(error: unknown): RunResult | undefined {
  return error instanceof ChildWorkflowFailure && error.cause instanceof ApplicationFailure ? (error.cause.details?.[0] as RunResult | undefined) : undefined;
}

/** What a child spent, as its result or failure says: nothing when it ended without one. */
function spentBy(ended: ChildOutcome): number {
  return 'result' in ended ? ended.result.costUsd : (carriedResult(ended.error)?.costUsd ?? 0);
}
