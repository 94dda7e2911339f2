import { CancelledFailure, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { TetherCostUsdKey, TetherStepsKey } from '../api/search-attributes.js';
import { emptyUsage, type RunResult } from '../api/types.js';
import { statusOfClosedRun } from './closed-status.js';
import type { agentRun } from '../workflows/agent-run.js';
import { cancellationCause, describeRun, resultFromFailure, type TetherClient } from './runs.js';

/** Waits for the run to end and returns its RunResult, whatever the ending. */
export async function waitForResult(tc: TetherClient, runId: string): Promise<RunResult> {
  const handle = tc.client.workflow.getHandle<typeof agentRun>(runId);
  try {
    return await handle.result();
  } catch (err) {
    if (!closedByTemporal(err)) return resultFromFailure(err, runId);
    if (err.cause instanceof CancelledFailure) {
      const cause = (await cancellationCause(tc, runId)) ?? 'cancelled through Temporal';
      return withOwnFigures(tc, runId, { runId, status: 'cancelled', steps: 0, costUsd: 0, usage: emptyUsage(), cause });
    }
    return withOwnFigures(tc, runId, resultFromFailure(err, runId));
  }
}

/** A run Temporal closed (cancelled, terminated, timed out) rather than the run itself: it carries no RunResult. */
function closedByTemporal(err: unknown): err is WorkflowFailedError {
  const cause = err instanceof WorkflowFailedError ? err.cause : undefined;
  return cause instanceof CancelledFailure || cause instanceof TerminatedFailure || cause instanceof TimeoutFailure;
}

/**
 * A run Temporal closed has a result of zeros: its figures are its own, from
 * its status (its memo, a worker's replay, or its history), else from what it
 * published last (its search attributes), whichever is further along.
 */
async function withOwnFigures(tc: TetherClient, runId: string, result: RunResult): Promise<RunResult> {
  const description = await describeRun(tc, runId).catch(() => null);
  if (!description) return result;
  const status = await statusOfClosedRun(tc, runId, description).catch(() => null);
  const attrs = description.typedSearchAttributes;
  return {
    ...result,
    steps: Math.max(status?.step ?? 0, attrs.get(TetherStepsKey) ?? 0),
    costUsd: Math.max(status?.costUsd ?? 0, attrs.get(TetherCostUsdKey) ?? 0),
    ...(status?.usage ? { usage: status.usage } : {}),
  };
}
