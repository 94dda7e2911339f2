import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { connectTemporal } from '../server/temporal-connection.js';
import type { QueryDefinition } from '@temporalio/common';
import type { ActivityDeps } from './deps.js';

/** One client per worker's activities (per `deps`), connected on first use. */
const clients = new WeakMap<ActivityDeps, Promise<Client>>();

function clientFor(deps: ActivityDeps, temporal: NonNullable<ActivityDeps['temporal']>): Promise<Client> {
  let client = clients.get(deps);
  if (!client) {
    const { address, namespace, dataConverter } = temporal;
    client = connectTemporal({ address }).then((connection) => new Client({ connection, namespace, dataConverter }));
    // A failed connection is not kept: the next query tries again.
    client.catch(() => clients.delete(deps));
    clients.set(deps, client);
  }
  return client;
}

/**
 * Asks a run a query from inside an activity (the critic reads the run's last
 * lines, a model call whose worker lost the transcript reads it back), within
 * `timeoutMs`. Queries add nothing to the run's history. Rejects when the
 * worker has no server to ask (activities run in-process) or the run does not
 * answer in time; callers have a fallback.
 */
export async function queryRun<T>(deps: ActivityDeps, runId: string, query: QueryDefinition<T>, timeoutMs: number): Promise<T> {
  if (!deps.temporal) throw new Error('this worker has no Temporal server to query');
  const client = await clientFor(deps, deps.temporal);
  return client.withDeadline(Date.now() + timeoutMs, () => client.workflow.getHandle(runId).query(query));
}

/**
 * Whether a workflow execution has closed (or is gone), asked of the server
 * within `timeoutMs`: null when the server does not say (it is away, or this
 * worker has none to ask).
 */
export async function executionClosed(deps: ActivityDeps, workflowId: string, runId: string, timeoutMs: number): Promise<boolean | null> {
  if (!deps.temporal) return null;
  try {
    const client = await clientFor(deps, deps.temporal);
    const { status } = await client.withDeadline(Date.now() + timeoutMs, () => client.workflow.getHandle(workflowId, runId).describe());
    return status.name !== 'RUNNING';
  } catch (err) {
    return err instanceof WorkflowNotFoundError ? true : null;
  }
}
