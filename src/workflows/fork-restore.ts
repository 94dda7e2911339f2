import { ActivityFailure, log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { Checkpoint, ForkStart } from '../api/fork.js';
import { WORKSPACE_WORKER_WAIT } from './activity-stubs.js';
import type { RunRuntime } from './run-runtime.js';

/**
 * A fork's first work: its workspace gets the files of the checkpoint it was
 * forked at, on the worker that holds that checkpoint (the run is bound to
 * it). Without those files the fork would continue on a lie, so a restore
 * that fails ends the fork `failed`, saying why.
 */
export async function restoreForkWorkspace(rt: RunRuntime, start: ForkStart, restore: Checkpoint): Promise<void> {
  const { of } = start;
  const queue = rt.queue;
  const acts = proxyActivities<Activities>({
    ...(queue ? { taskQueue: queue, scheduleToStartTimeout: WORKSPACE_WORKER_WAIT } : {}),
    startToCloseTimeout: '10m',
    retry: { initialInterval: '1s', maximumAttempts: 3 },
  });
  const input = { runId: rt.runId, workspace: rt.spec.workspace, from: { runId: restore.runId, commit: restore.commit } };
  try {
    const restored = await acts.restoreCheckpoint.executeWithOptions({ summary: `restore the workspace of ${of.runId} at step ${of.step}` }, [input]);
    rt.run.recordCheckpoint(restored, queue, of.step);
    log.info(`fork of ${of.runId} at step ${of.step}: workspace restored from ${restore.commit}`, { runId: rt.runId });
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    const why = rt.workerGone(err) ? `the worker that holds it (${queue}) is gone` : (err.cause?.message ?? err.message);
    rt.run.end({ status: 'failed', cause: `fork: could not restore the workspace of ${of.runId} at step ${of.step}: ${why}` }, Date.now());
  }
}
