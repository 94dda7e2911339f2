import { CancellationScope, getExternalWorkflowHandle, log, ParentClosePolicy, setHandler, startChild, WorkflowIdReusePolicy } from '@temporalio/workflow';
import { criticReportSignal, progressSignal, type CriticInput, type ProgressReport } from '../api/messages.js';
import type { RunContext } from './context.js';

/**
 * The run's side of its critic: starts the `critic` child, reports progress
 * to it, and shows the critic's own report in `status`. The critic is
 * abandoned rather than awaited so that a critic that fails can never take
 * the run down, and so it keeps watching across the run's continue-as-new.
 */
export function createCriticLink(ctx: RunContext, alreadyStarted: boolean) {
  const { run, spec, runId } = ctx;
  const criticId = `${runId}.critic`;
  const enabled = spec.critic.policy !== 'off';
  let started = alreadyStarted;
  let criticCostSeen = run.critic?.costUsd ?? 0;
  let decisionsSeen = run.critic?.decisions.length ?? 0;
  setHandler(criticReportSignal, (report) => {
    run.critic = report;
    // The critic's own model calls count in the run's cost.
    const cost = report.costUsd ?? 0;
    if (cost > criticCostSeen) run.addCost(cost - criticCostSeen, Date.now());
    criticCostSeen = Math.max(criticCostSeen, cost);
    for (const d of report.decisions.slice(decisionsSeen)) ctx.metrics.criticDecision(d.decision);
    decisionsSeen = report.decisions.length;
  });

  function send(report: ProgressReport): Promise<void> {
    return CancellationScope.nonCancellable(() => getExternalWorkflowHandle(criticId).signal(progressSignal, report)).catch((err) => {
      log.info(`critic ${criticId} unreachable (it may have ended): ${(err as Error).message}`, { runId });
    });
  }

  const progress = (ended = false): ProgressReport => ({
    step: run.step,
    lastActivityAt: new Date(run.lastActivityAtMs).toISOString(),
    lastTool: run.lastTool,
    ...(ended ? { ended: true } : {}),
  });

  return {
    get started() {
      return started;
    },
    async start(): Promise<void> {
      if (!enabled || started) return;
      const input: CriticInput = {
        runId,
        goal: spec.goal,
        model: spec.model,
        policy: spec.critic.policy as CriticInput['policy'],
        softTimeoutMs: spec.critic.softTimeout,
        ...(spec.critic.model ? { criticModel: spec.critic.model } : {}),
      };
      try {
        await startChild('critic', {
          workflowId: criticId,
          args: [input],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        });
        started = true;
      } catch (err) {
        log.error(`critic could not start; the run relies on its own deadline: ${(err as Error).message}`, { runId });
      }
    },
    /** Tells the critic the run is alive (step or tool start); fire and forget. */
    report(): void {
      if (started) void send(progress());
    },
    async end(): Promise<void> {
      if (started) await send(progress(true));
    },
  };
}
