import type { WorkflowExecutionDescription } from '@temporalio/client';
import type { RunStatus, TranscriptMessage } from '../api/types.js';
import { statusOfClosedRun } from './closed-status.js';
import { TetherError } from './errors.js';
import { withPendingRetries } from './pending-retries.js';
import { type TetherClient, cancellationCause, getStatus, getTranscript, toTetherError } from './runs.js';
import { noWorkerFor, noWorkerToReplay, runWorkerPresence, workerPresence } from './worker-presence.js';

/** A run's status as last read, and whether the run had closed then. */
export interface RunStatusReading {
  status: RunStatus;
  /** The closed execution the status was read from (its Temporal run id); null while the run is open. */
  closedExecution: string | null;
  /** The queue the run's workflow tasks go to: its workers replay it to answer a query. */
  taskQueue: string;
}

/** What a workflow that is not a run answers: the panel and the CLI say the same. */
export const NOT_A_RUN = 'not a Tether run: it has no status or transcript';

/** How long a closed run's transcript may take: a worker replays the whole run to answer. */
const CLOSED_TRANSCRIPT_MS = 10_000;

/**
 * The status of a run, open or closed. An open run answers the status query.
 * A closed run left its final status in its memo (closed-status.ts), so
 * reading it needs no worker and replays nothing; a cancelled one gets who
 * cancelled it from its history. A closed execution does not change, so
 * `previous`, read from the same execution, is returned as it was: a watcher
 * that polls a closed run costs one describe a poll.
 */
export async function readRunStatus(tc: TetherClient, runId: string, previous?: RunStatusReading): Promise<RunStatusReading> {
  const description = await describeRun(tc, runId);
  const taskQueue = description.taskQueue;
  if (description.status.name === 'RUNNING') return { status: await liveStatus(tc, runId, description), closedExecution: null, taskQueue };
  if (previous?.closedExecution === description.runId) return previous;
  return { status: await closedStatus(tc, runId, description), closedExecution: description.runId, taskQueue };
}

/** The run's latest execution as Temporal describes it; `not_found` for an unknown id or a workflow that is not a run. */
export async function describeRun(tc: TetherClient, runId: string): Promise<WorkflowExecutionDescription> {
  const description = await tc.client.workflow
    .getHandle(runId)
    .describe()
    .catch((err: unknown) => {
      throw toTetherError(err, runId);
    });
  if (description.type !== 'agentRun') throw new TetherError(NOT_A_RUN, 'not_found');
  return description;
}

/** An open run's status, from a worker: asked only when one polls the run's queue, so a reader with none is told why at once. */
async function liveStatus(tc: TetherClient, runId: string, description: WorkflowExecutionDescription): Promise<RunStatus> {
  const presence = await runWorkerPresence(tc, description);
  if (!presence.live) throw noWorkerFor(runId, 'status', presence, 'answer');
  return withPendingRetries(tc, await getStatus(tc, runId), description);
}

async function closedStatus(tc: TetherClient, runId: string, description: WorkflowExecutionDescription): Promise<RunStatus> {
  const status = await statusOfClosedRun(tc, runId, description);
  if (status.state !== 'cancelled') return status;
  return { ...status, cause: (await cancellationCause(tc, runId)) ?? status.cause };
}

/**
 * The transcript of a run whose status was just read. Only a worker can
 * answer (it replays the run): for a closed run, a worker must be polling the
 * run's queue, and it gets a deadline, so a page never waits on a run nobody
 * can replay; the error says how to read the run instead.
 */
export async function readTranscript(tc: TetherClient, runId: string, reading: RunStatusReading): Promise<TranscriptMessage[]> {
  if (reading.closedExecution === null) return getTranscript(tc, runId);
  const presence = await workerPresence(tc, reading.taskQueue);
  if (!presence.live) throw noWorkerToReplay(runId, 'transcript', presence);
  return getTranscript(tc, runId, CLOSED_TRANSCRIPT_MS);
}
