import { ActivityCancellationType, proxyActivities, proxyLocalActivities, proxySinks } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { TetherSinks } from '../api/sinks.js';
import type { RunSpec } from '../api/spec.js';
import { LLM_ACTIVITY_RETRY } from '../llm/retry-policy.js';

/** The worker's metrics, reached through a sink (skipped on replay, so nothing counts twice). */
export const metricsSink = () => proxySinks<TetherSinks>().metrics;

/** Asks whichever worker answers to hold this run's workspace (runs recorded before the lean-history patch). */
export const { claimWorkspace } = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: { maximumAttempts: 10 } });
/** Asks the worker running this workflow task to hold this run's workspace: no activity task, no extra workflow task. */
export const { claimWorkspace: claimWorkspaceHere } = proxyLocalActivities<Activities>({ startToCloseTimeout: '30s', retry: { maximumAttempts: 10 } });

/** How long a workspace-bound activity may wait for its worker before the worker counts as gone. */
export const WORKSPACE_WORKER_WAIT = '20s';

/** The activity stubs a run calls. */
export type RunActivities = ReturnType<typeof activityProxies>;

/** Activity stubs with the timeouts, heartbeats and retry policies of each kind of work. */
export function activityProxies(spec: RunSpec, workspaceQueue: string | null) {
  const bound = workspaceQueue ? { taskQueue: workspaceQueue, scheduleToStartTimeout: WORKSPACE_WORKER_WAIT } : {};
  // Model calls go on the workflow's own queue, so the server hands each to the worker that completed the
  // workflow task with its reply (eager dispatch): no trip through matching, and that worker's transcript
  // cache serves the call. One that lands elsewhere reads the transcript from the run (src/activities/llm.ts).
  const llmOptions = { startToCloseTimeout: spec.limits.llmTimeout + 30_000, heartbeatTimeout: '30s', retry: LLM_ACTIVITY_RETRY } as const;
  const llm = proxyActivities<Activities>({ ...llmOptions, cancellationType: ActivityCancellationType.TRY_CANCEL });
  // A model call cut short is not waited for (RunRuntime.interruptibleModelCall), but its outcome is still heard:
  // a reply that came anyway was paid for. The cancellation type decides only that, never a command.
  const modelCall = proxyActivities<Activities>({ ...llmOptions, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED });
  const workspace = proxyActivities<Activities>({
    ...bound,
    startToCloseTimeout: spec.limits.toolTimeout + 60_000,
    heartbeatTimeout: '10s',
    // A kill returns only once the tool's process tree is gone.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 3 },
  });
  // One try: a holder that does not pick it up within the wait is gone, and one that fails it (an older worker without it) is there.
  const holder = proxyActivities<Activities>({ ...bound, startToCloseTimeout: '10s', retry: { maximumAttempts: 1 } });
  // No retries here: a file tool that failed as a local activity goes to the ordinary activity, which has them.
  const local = proxyLocalActivities<Activities>({
    startToCloseTimeout: spec.limits.toolTimeout + 60_000,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 1 },
  });
  return {
    runFileToolHere: local.runFileToolHere,
    confirmHolder: holder.claimWorkspace,
    callModel: modelCall.callModel,
    summarizeTranscript: llm.summarizeTranscript,
    runTool: workspace.runTool,
    checkpointBeforeCall: workspace.checkpointBeforeCall,
    checkpointAfterCall: workspace.checkpointAfterCall,
    runVerification: workspace.runVerification,
  };
}
