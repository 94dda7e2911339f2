import { ActivityFailure, log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { Checkpoint, ForkStart } from '../api/fork.js';
import { WORKSPACE_WORKER_WAIT } from './activity-stubs.js';
import { patchedSinceInterceptorsAlways } from './lean-history.js';
import type { RunRuntime } from './run-runtime.js';

/**
 * A fork's first work: its workspace gets the files of the checkpoint it was
 * forked at, on the worker that holds that checkpoint (the run is bound to
 * it). When that worker is gone, the fork moves to a live one and tries there:
 * a worker restarted with the same TETHER_HOME has the checkpoints on its
 * disk. Without those files the fork would continue on a lie, so a restore
 * that fails ends the fork `failed`, saying why.
 */
export async function restoreForkWorkspace(rt: RunRuntime, start: ForkStart, restore: Checkpoint): Promise<void> {
  const { of } = start;
  const held = rt.queue;
  const failure = await restoreOn(rt, start, restore);
  if (!failure) return;
  // patched(): runs recorded before ended failed when the worker that held the checkpoint was gone.
  if (rt.workerGone(failure) && patchedSinceInterceptorsAlways('fork-restore-elsewhere')) {
    await rt.bindWorkspace();
    log.warn(`fork of ${of.runId}: the worker that holds its checkpoints (${held}) is gone; restoring on ${rt.queue}`, { runId: rt.runId });
    const elsewhere = await restoreOn(rt, start, restore);
    if (elsewhere)
      endFailed(rt, start, `the worker that held it (${held}) is gone, and ${rt.queue} could not restore it: ${elsewhere.cause?.message ?? elsewhere.message}`);
    return;
  }
  endFailed(rt, start, rt.workerGone(failure) ? `the worker that holds it (${held}) is gone` : (failure.cause?.message ?? failure.message));
}

/** One attempt at the restore on the worker the run is bound to; the activity's failure, or null once the files are there. */
async function restoreOn(rt: RunRuntime, start: ForkStart, restore: Checkpoint): Promise<ActivityFailure | null> {
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
    return null;
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    return err;
  }
}

function endFailed(rt: RunRuntime, { of }: ForkStart, why: string): void {
  rt.run.end({ status: 'failed', cause: `fork: could not restore the workspace of ${of.runId} at step ${of.step}: ${why}` }, Date.now());
}
