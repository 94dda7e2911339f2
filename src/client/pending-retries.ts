import type { WorkflowExecutionDescription } from '@temporalio/client';
import { decodeOptionalFailureToOptionalError } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { PendingRetry, RunStatus } from '../api/types.js';
import type { TetherClient } from './runs.js';

/** How much of a failure the status quotes. */
const FAILURE_CHARS = 500;

/**
 * `status` with what of the run is failing and waiting to be tried again. The
 * workflow cannot see an activity's retries (Temporal schedules them), so a
 * model call told to wait an hour by its provider looked like a call in
 * progress; the server's description of the run has each pending activity's
 * attempt, last failure and next attempt. Failures are decoded with the
 * client's codec, as the run's own payloads are.
 */
export async function withPendingRetries(tc: TetherClient, status: RunStatus, description: WorkflowExecutionDescription): Promise<RunStatus> {
  const failing = (description.raw.pendingActivities ?? []).filter((p) => (p.attempt ?? 1) > 1 && p.lastFailure);
  if (!failing.length) return status;
  const retrying = await Promise.all(
    failing.map(async (p): Promise<PendingRetry> => {
      const next = p.nextAttemptScheduleTime?.seconds;
      return {
        activity: p.activityType?.name ?? 'activity',
        attempt: p.attempt ?? 2,
        lastFailure: (await failureText(tc, p.lastFailure!)).slice(0, FAILURE_CHARS),
        ...(next ? { nextAttemptAt: new Date(Number(next) * 1000).toISOString() } : {}),
      };
    }),
  );
  return { ...status, retrying };
}

type ProtoFailure = Parameters<typeof decodeOptionalFailureToOptionalError>[1];

async function failureText(tc: TetherClient, failure: ProtoFailure): Promise<string> {
  const decoded = await decodeOptionalFailureToOptionalError(tc.client.options.loadedDataConverter, failure).catch(() => undefined);
  return decoded?.message ?? failure?.message ?? 'a failure';
}
