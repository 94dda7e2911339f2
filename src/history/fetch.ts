import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { converterOf, decodeEvent } from './decode.js';
import type { ExecutionEvents } from './events.js';

type RawEvent = temporal.api.history.v1.IHistoryEvent;

/** One execution's raw history, as Temporal holds it. */
export interface RawExecution {
  executionId: string;
  events: RawEvent[];
}

/** A guard against a chain that never ends (a bug elsewhere): far more executions than any run makes. */
const MAX_EXECUTIONS = 10_000;

/**
 * Every execution of a run, oldest first: the latest, then each one it
 * continued from (its start event names the execution before it).
 */
export async function fetchChain(client: Client, runId: string): Promise<RawExecution[]> {
  const latest = await client.workflow.getHandle(runId).describe();
  const chain: RawExecution[] = [];
  let executionId: string | null = latest.runId;
  while (executionId && chain.length < MAX_EXECUTIONS) {
    const history = await client.workflow.getHandle(runId, executionId).fetchHistory();
    const events: RawEvent[] = history.events ?? [];
    chain.push({ executionId, events });
    const previous: string | null | undefined = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    executionId = previous || null;
  }
  return chain.reverse();
}

/** The chain with every event decoded (payloads opened with the client's converter, encryption included). */
export async function readChain(client: Client, runId: string): Promise<ExecutionEvents[]> {
  const converter = converterOf(client);
  const chain = await fetchChain(client, runId);
  return Promise.all(chain.map(async (x) => ({ executionId: x.executionId, events: await Promise.all(x.events.map((e) => decodeEvent(converter, e))) })));
}
