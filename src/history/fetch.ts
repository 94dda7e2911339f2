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

/** Says, from the executions read so far (newest first), that the older ones are not needed. */
export type EnoughRead = (newestFirst: readonly RawExecution[]) => boolean;

/**
 * Every execution of a run, oldest first: the latest, then each one it
 * continued from (its start event names the execution before it), back to
 * the first or until `enough` says the newest ones suffice.
 */
export async function fetchChain(client: Client, runId: string, enough: EnoughRead = () => false): Promise<RawExecution[]> {
  const latest = await client.workflow.getHandle(runId).describe();
  const chain: RawExecution[] = [];
  let executionId: string | null = latest.runId;
  while (executionId && chain.length < MAX_EXECUTIONS) {
    const history = await client.workflow.getHandle(runId, executionId).fetchHistory();
    const events: RawEvent[] = history.events ?? [];
    chain.push({ executionId, events });
    const previous: string | null | undefined = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    executionId = enough(chain) ? null : previous || null;
  }
  return chain.reverse();
}

/** The chain with every event decoded (payloads opened with the client's converter, encryption included). */
export async function readChain(client: Client, runId: string, enough?: EnoughRead): Promise<ExecutionEvents[]> {
  const converter = converterOf(client);
  const chain = await fetchChain(client, runId, enough);
  return Promise.all(chain.map(async (x) => ({ executionId: x.executionId, events: await Promise.all(x.events.map((e) => decodeEvent(converter, e))) })));
}

/** How many model calls the executions scheduled: a step each, and a compaction's. */
export function modelCallsScheduled(chain: readonly RawExecution[]): number {
  let calls = 0;
  for (const { events } of chain) for (const e of events) if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel') calls++;
  return calls;
}
