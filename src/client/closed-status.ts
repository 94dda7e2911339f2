import type { WorkflowExecutionDescription } from '@temporalio/client';
import { FINAL_STATUS_MEMO } from '../api/memo.js';
import { appendAudit, terminateEntry } from '../api/audit.js';
import type { RunSpec } from '../api/spec.js';
import { TetherCostUsdKey, TetherStepsKey } from '../api/search-attributes.js';
import { isTerminal, noEmergencyStop, type RunResult, type RunStatus } from '../api/types.js';
import { getStatus, resultFromFailure, type TetherClient } from './runs.js';
import { hasLiveWorker } from './worker-presence.js';

/**
 * What a closed run's start said of it: its spec as checked, or, for a start
 * the run refused (a raw Temporal start with a bad spec), its goal and model
 * as far as they read.
 */
export type StartedSpec = Pick<RunSpec, 'goal' | 'model'> & { limits?: RunSpec['limits'] };

/** What a closed run left behind: its spec (the start event's input), its result, and what Temporal says of it. */
export interface RunEnding {
  spec: StartedSpec | null;
  result: RunResult;
  startedAt: Date;
  closedAt: Date;
  /** The run's own figures, from its search attributes (a run cancelled or terminated carries no result). */
  steps: number | null;
  costUsd: number | null;
}

/**
 * The status of a closed run. A run leaves its final status in its memo as it
 * ends, so the description already holds it, in full. A run that left none
 * (terminated, or older than the memo) is asked: a live worker on its queue
 * replays it and answers the status query; with none, or if it does not
 * answer within 5 s (a worker that just died is still listed), the run's
 * history answers alone.
 */
export async function statusOfClosedRun(tc: TetherClient, runId: string, description: WorkflowExecutionDescription): Promise<RunStatus> {
  const final = finalStatus(runId, description);
  if (final) return final;
  if (await hasLiveWorker(tc, description.taskQueue)) {
    const live = await getStatus(tc, runId, 5_000).catch(() => null);
    const terminated = terminatedAt(description);
    // A terminate ends a run killed, whatever end the replay shows it reaching (a cancel it was still carrying out, as
    // a sub-agent of a cancelled parent is when the parent's close ends it); a run already killed keeps its own reason.
    if (live && isTerminal(live.state) && (!terminated || live.state === 'killed')) return live;
    // A replay cannot see what closed the run from outside (a terminate): the history says how it ended, the replay the rest.
    if (live) return endedFromOutside(live, await closedRunStatus(tc, runId, description), terminated);
  }
  return closedRunStatus(tc, runId, description);
}

/** When Temporal terminated the run, if it did. */
function terminatedAt(description: WorkflowExecutionDescription): Date | null {
  return description.status.name === 'TERMINATED' ? (description.closeTime ?? new Date()) : null;
}

/**
 * The status of a run Temporal closed while the run itself was still going: how it ended, and nothing left waiting.
 * A terminate (at `terminated`) is a kill its audit trail records, by "unknown", as a raw client's kill is. Pure.
 */
export function endedFromOutside(live: RunStatus, closed: RunStatus, terminated: Date | null = null): RunStatus {
  const { pendingToolCall: _call, question: _question, cause: _cause, ...rest } = live;
  const reason = closed.cause?.replace(/^terminated: /, '') ?? '';
  return {
    ...rest,
    ...(terminated ? { audit: appendAudit([...(live.audit ?? [])], terminateEntry(reason, terminated.getTime())) } : {}),
    state: closed.state,
    ...(closed.cause ? { cause: closed.cause } : {}),
    deadline: closed.deadline,
    emergencyStop: noEmergencyStop(),
  };
}

/** The status the run put in its memo as it ended, if it did. */
export function finalStatus(runId: string, description: Pick<WorkflowExecutionDescription, 'memo'>): RunStatus | null {
  const status = description.memo?.[FINAL_STATUS_MEMO] as Partial<RunStatus> | undefined;
  return status && typeof status === 'object' && status.runId === runId && typeof status.state === 'string' ? (status as RunStatus) : null;
}

/**
 * The status of a closed run, read from its history. A status query would
 * need a worker to replay the run, and waits for one until it times out
 * when none is running; the history answers alone. What only the live run
 * knows (its audit trail, critic, warnings) is left out: `history` shows it.
 */
export async function closedRunStatus(tc: TetherClient, runId: string, description: WorkflowExecutionDescription): Promise<RunStatus> {
  const result: RunResult = await tc.client.workflow
    .getHandle(runId)
    .result()
    .catch((err: unknown) => resultFromFailure(err, runId));
  const attrs = description.typedSearchAttributes;
  return statusAtEnd(runId, {
    spec: await startSpec(tc, runId, description.runId),
    result,
    startedAt: description.startTime,
    closedAt: description.closeTime ?? new Date(),
    steps: attrs.get(TetherStepsKey) ?? null,
    costUsd: attrs.get(TetherCostUsdKey) ?? null,
  });
}

/** The spec the run's latest execution started with: the first event of its history, one page of one event. */
async function startSpec(tc: TetherClient, runId: string, executionId: string): Promise<StartedSpec | null> {
  const [{ converterOf, decodeEvent }, { runSpecSchema }] = await Promise.all([import('../history/decode.js'), import('../api/spec.js')]);
  const page = await tc.client.workflowService.getWorkflowExecutionHistory({
    namespace: tc.namespace,
    execution: { workflowId: runId, runId: executionId },
    maximumPageSize: 1,
  });
  const first = page.history?.events?.[0];
  if (!first) return null;
  const started = await decodeEvent(converterOf(tc.client), first);
  if (started.kind !== 'workflow_started') return null;
  const input = started.input[0];
  const parsed = runSpecSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const raw = input && typeof input === 'object' ? (input as Record<string, unknown>) : {};
  return { goal: typeof raw.goal === 'string' ? raw.goal : '', model: typeof raw.model === 'string' ? raw.model : '' };
}

/** A closed run's status from what it left behind. Pure. Its deadline is its end: it has no time left. */
export function statusAtEnd(runId: string, end: RunEnding): RunStatus {
  const { spec, result } = end;
  const closedAt = end.closedAt.toISOString();
  return {
    runId,
    state: result.status,
    // A run cancelled or terminated has a result of zeros; the figures it published last are its real ones.
    step: result.steps || end.steps || 0,
    maxSteps: spec?.limits?.maxSteps ?? 0,
    deadline: closedAt,
    consecutiveErrors: 0,
    maxConsecutiveErrors: spec?.limits?.maxConsecutiveErrors ?? 0,
    emergencyStop: noEmergencyStop(),
    lastActivityAt: closedAt,
    lastTool: null,
    costUsd: result.costUsd || end.costUsd || 0,
    budgetUsd: spec?.limits?.budgetUsd ?? null,
    warnings: [],
    ...(result.cause ? { cause: result.cause } : {}),
    model: spec?.model ?? '',
    goal: spec?.goal ?? '',
    startedAt: end.startedAt.toISOString(),
    usage: result.usage,
  };
}
