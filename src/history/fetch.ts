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
 * continued from (its start event names the execution before it), back to
 * the first.
 */
export async function fetchChain(client: Client, runId: string): Promise<RawExecution[]> {
  const latest = await client.workflow.getHandle(runId).describe();
  const chain: RawExecution[] = [];
  let executionId: string | null = latest.runId;
  while (executionId && chain.length < MAX_EXECUTIONS) {
    const history = await client.workflow.getHandle(runId, executionId).fetchHistory();
    const events: RawEvent[] = history.events ?? [];
    chain.push({ executionId, events });
    executionId = previousExecution(events);
  }
  return chain.reverse();
}

const previousExecution = (events: RawEvent[]): string | null => events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || null;

const isModelCall = (e: RawEvent) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel';

/** Events a page when a history is read backwards: a step is about ten. */
const REVERSE_PAGE = 500;

/**
 * The end of a run's history from its last `calls` model calls on (a step
 * each, and a compaction's), oldest first, read backwards a page at a time:
 * a long execution costs what a short one does. The first execution returned
 * may begin at a model call rather than at its start; every activity, child
 * and pause after that call is whole.
 */
export async function fetchLastModelCalls(client: Client, runId: string, calls: number): Promise<RawExecution[]> {
  const latest = await client.workflow.getHandle(runId).describe();
  const chain: RawExecution[] = [];
  let executionId: string | null = latest.runId;
  let left = calls;
  while (executionId && left > 0 && chain.length < MAX_EXECUTIONS) {
    const newestFirst: RawEvent[] = [];
    let pageToken: Uint8Array | undefined;
    do {
      const page = await client.workflowService.getWorkflowExecutionHistoryReverse({
        namespace: client.options.namespace,
        execution: { workflowId: runId, runId: executionId },
        maximumPageSize: REVERSE_PAGE,
        nextPageToken: pageToken,
      });
      for (const event of page.history?.events ?? []) {
        newestFirst.push(event);
        if (isModelCall(event) && --left === 0) break;
      }
      pageToken = left > 0 && page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (pageToken);
    const events = newestFirst.reverse();
    chain.push({ executionId, events });
    executionId = left > 0 ? previousExecution(events) : null;
  }
  return chain.reverse();
}

/** The chain with every event decoded (payloads opened with the client's converter, encryption included). */
export async function readChain(client: Client, runId: string): Promise<ExecutionEvents[]> {
  return decodeChain(client, await fetchChain(client, runId));
}

/** fetchLastModelCalls, decoded. */
export async function readLastModelCalls(client: Client, runId: string, calls: number): Promise<ExecutionEvents[]> {
  return decodeChain(client, await fetchLastModelCalls(client, runId, calls));
}

function decodeChain(client: Client, chain: RawExecution[]): Promise<ExecutionEvents[]> {
  const converter = converterOf(client);
  return Promise.all(chain.map(async (x) => ({ executionId: x.executionId, events: await Promise.all(x.events.map((e) => decodeEvent(converter, e))) })));
}
