import {
  CancellationScope,
  type ChildWorkflowHandle,
  condition,
  log,
  ParentClosePolicy,
  patched,
  setHandler,
  startChild,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { signalQuietly } from './signal-quietly.js';
import { criticStatusSchema, payloadProblem } from '../api/message-schemas.js';
import { criticReportSignal, progressSignal } from '../api/messages.js';
import type { RunSpec } from '../api/spec.js';
import type { CriticInput, ProgressReport } from '../api/types.js';
import type { RunRuntime } from './run-runtime.js';

/** How long a run's end waits for its critic to end after telling it so. */
const CRITIC_END_WAIT_MS = 10_000;

/** Shows the critic's reports in the run's status; the critic's own model calls count in the run's cost. */
function listenToCriticReports(rt: RunRuntime): void {
  setHandler(criticReportSignal, (payload: unknown) => {
    // Anyone who reaches Temporal can send this: a bad report is ignored, never a failed workflow task.
    const report = criticStatusSchema.safeParse(payload);
    if (!report.success) return log.warn(`ignored criticReport signal: ${payloadProblem(report.error)}`, { runId: rt.runId });
    for (const decision of rt.run.recordCriticReport(report.data, Date.now())) rt.metrics.criticDecision(decision);
  });
}

function criticInputOf(spec: RunSpec, runId: string, policy: CriticInput['policy']): CriticInput {
  return {
    runId,
    goal: spec.goal,
    model: spec.model,
    policy,
    softTimeoutMs: spec.critic.softTimeout,
    maxHistoryEvents: spec.limits.maxHistoryEvents,
    ...(spec.critic.model ? { criticModel: spec.critic.model } : {}),
  };
}

/** The critic workflow as this execution's child. */
type CriticChild = ChildWorkflowHandle<(input: CriticInput) => Promise<void>>;

/**
 * The run's side of its critic: starts the `critic` child, reports progress
 * to it, and shows the critic's own report in `status`. The critic is
 * abandoned rather than awaited so that a critic that fails can never take
 * the run down, and so it keeps watching across the run's continue-as-new.
 */
export class CriticLink {
  private readonly criticId: string;
  /** The critic as this execution's child: null when an earlier execution started it (its end is not this one's event). */
  private child: CriticChild | null = null;
  private lastReportMs = Number.NEGATIVE_INFINITY;
  /** Progress within this window of the last report is not sent: the critic's idea of the last activity is at most this stale. */
  private readonly coalesceMs: number;
  /**
   * The time the run's results record (a model reply's arrival, then the tools' durations after it; null when
   * one did not say), and its value at the last report. The window is measured on these, not on Date.now(): a
   * query that reaches a worker while the run has no sticky worker (after a server restart) lets the SDK apply
   * an activity's result with the previous task's time, and a report skipped then is sent on replay, a
   * nondeterminism error that wedges the run.
   */
  private resultsAt: number | null = null;
  private reportedAt: number | null = null;

  constructor(
    private readonly rt: RunRuntime,
    private isStarted: boolean,
  ) {
    this.criticId = `${rt.runId}.critic`;
    this.coalesceMs = Math.min(1_000, rt.spec.critic.softTimeout / 20);
    listenToCriticReports(rt);
  }

  get started(): boolean {
    return this.isStarted;
  }

  async start(): Promise<void> {
    const { spec, runId } = this.rt;
    const { policy } = spec.critic;
    if (policy === 'off' || this.isStarted) return;
    try {
      this.child = await startChild('critic', {
        workflowId: this.criticId,
        args: [criticInputOf(spec, runId, policy)],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      });
      this.isStarted = true;
    } catch (err) {
      log.error(`critic could not start; the run relies on its own deadline: ${(err as Error).message}`, { runId });
    }
  }

  /**
   * Tells the critic the run is alive (step or tool start); fire and forget.
   * Reports close together are coalesced: a busy run would otherwise put
   * a signal per step and per tool in the critic's history.
   */
  report(): void {
    if (!this.isStarted) return;
    if (patched('critic-progress-by-work')) {
      // Either way: workers' clocks differ, and a run that moved to one behind must not fall silent until it catches up.
      if (this.resultsAt !== null && this.reportedAt !== null && Math.abs(this.resultsAt - this.reportedAt) < this.coalesceMs) return;
      this.reportedAt = this.resultsAt;
      return void this.send(this.progress());
    }
    const now = Date.now();
    if (now - this.lastReportMs < this.coalesceMs && patched('critic-progress-coalesced')) return;
    this.lastReportMs = now;
    void this.send(this.progress());
  }

  /** A model reply arrived at this time (by its worker's clock), or at a time it did not say. */
  recordedAt(atMs: number | undefined): void {
    this.resultsAt = atMs ?? null;
  }

  /** A tool ran this long after the last recorded time, or for a time it did not say. */
  worked(ms: number | undefined): void {
    this.resultsAt = this.resultsAt === null || ms === undefined ? null : this.resultsAt + ms;
  }

  /**
   * Tells the critic each time the run is paused and goes on: a run that
   * waits for a person (an emergency stop, a budget, a question, a tool
   * approval) is not stalled, and its idle clock starts again when it goes on.
   */
  async reportPauses(): Promise<void> {
    const { run } = this.rt;
    while (this.isStarted && !run.ended) {
      await condition(() => run.paused || run.ended);
      // patched(): runs recorded before the critic heard of pauses replay without these reports.
      if (run.ended || !patched('critic-knows-pauses')) return;
      void this.send({ ...this.progress(), paused: true });
      await condition(() => !run.paused || run.ended);
      if (run.ended) return;
      void this.send({ ...this.progress(), lastActivityAt: new Date(Date.now()).toISOString(), paused: false });
    }
  }

  async end(): Promise<void> {
    if (!this.isStarted) return;
    await this.send(this.progress(true));
    // The critic ends on this report. Its end is an event in this execution's history: landing while the run's
    // closing task runs, it turns the closing back once (a failed workflow task, UnhandledCommand). So the run
    // waits for it, a little: a critic that does not end in time is left to end alone.
    if (this.child && patched('await-critic-end')) await awaitEnd(this.child);
  }

  private send(report: ProgressReport): Promise<void> {
    return signalQuietly(this.criticId, progressSignal, report, `report progress to critic ${this.criticId} (it may have ended)`, 'info');
  }

  private progress(ended = false): ProgressReport {
    const { run } = this.rt;
    return {
      step: run.step,
      lastActivityAt: new Date(run.lastActivityAtMs).toISOString(),
      lastTool: run.lastTool,
      ...(ended ? { ended: true } : {}),
    };
  }
}

/** Waits up to CRITIC_END_WAIT_MS for the critic to end, whatever a kill of the run does meanwhile. */
async function awaitEnd(child: CriticChild): Promise<void> {
  let ended = false;
  child.result().then(
    () => (ended = true),
    () => (ended = true),
  );
  await CancellationScope.nonCancellable(() => condition(() => ended, CRITIC_END_WAIT_MS));
}
