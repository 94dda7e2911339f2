import { ActivityCancellationType, proxyActivities, proxySinks, type CancellationScope } from '@temporalio/workflow';
import type { RunSpec } from '../api/spec.js';
import type { TetherSinks } from '../api/sinks.js';
import type { Activities } from '../activities/index.js';
import type { RunState } from '../run/run-state.js';

/** What the pieces of a run's workflow share: its state, its activities, and the ways to publish and interrupt. */
export interface RunContext {
  runId: string;
  spec: RunSpec;
  run: RunState;
  acts: ReturnType<typeof activityProxies>;
  /** The task queue of the worker holding this run's workspace; null when workspaces are shared. */
  workspaceQueue: string | null;
  /** How much of the transcript the bound worker already holds (it is sent as a delta). */
  sent: { epoch: number; length: number };
  metrics: TetherSinks['metrics'];
  /** Upserts the search attributes that changed. */
  publish(): void;
  /** Runs work that a kill or the deadline may cut short; undefined when it was. */
  interruptible<T>(work: () => Promise<T>): Promise<T | undefined>;
  /** The scope of the work in flight, cancelled by a kill or the deadline. */
  inFlight: CancellationScope | null;
  /** Logs a trip of the emergency stop (and tells a parent run) when `reason` is set. */
  noteTrip(reason: string | null): void;
  /** Whether a failure says the worker holding the workspace is gone. */
  workerGone(err: unknown): boolean;
  /** Binds the run to a live worker; returns the notice telling the model what was lost. */
  rebind(): Promise<string>;
}

export const metricsSink = () => proxySinks<TetherSinks>().metrics;

/** Asks whichever worker answers to hold this run's workspace. */
export const { claimWorkspace } = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: { maximumAttempts: 10 } });

/** How long a workspace-bound activity may wait for its worker before the worker counts as gone. */
export const WORKSPACE_WORKER_WAIT = '20s';

/** Activity stubs with the timeouts, heartbeats and retry policies of each kind of work. */
export function activityProxies(spec: RunSpec, workspaceQueue: string | null) {
  // Model calls go to the worker holding the run too, so its transcript cache serves every call.
  const bound = workspaceQueue ? { taskQueue: workspaceQueue, scheduleToStartTimeout: WORKSPACE_WORKER_WAIT } : {};
  const llm = proxyActivities<Activities>({
    ...bound,
    startToCloseTimeout: spec.limits.llmTimeout + 30_000,
    heartbeatTimeout: '30s',
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    // The activity sets each delay itself (jitter, Retry-After) and marks a class's last attempt final.
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '60s', maximumAttempts: 5 },
  });
  const workspace = proxyActivities<Activities>({
    ...bound,
    startToCloseTimeout: spec.limits.toolTimeout + 60_000,
    heartbeatTimeout: '10s',
    // A kill returns only once the tool's process tree is gone.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 3 },
  });
  return {
    callModel: llm.callModel,
    summarizeTranscript: llm.summarizeTranscript,
    runTool: workspace.runTool,
    runVerification: workspace.runVerification,
  };
}
