import { defaultPayloadConverter, optionalTsToDate, type Payload } from '@temporalio/common';
import proto, { type temporal } from '@temporalio/proto';
import { GOAL_MEMO } from '../api/memo.js';
import * as keys from '../api/search-attributes.js';
import { type ListFilter, listedState, listQuery } from './list-query.js';
import type { TetherClient } from './runs.js';

export type { ListFilter } from './list-query.js';

const STATUS = proto.temporal.api.enums.v1.WorkflowExecutionStatus;

/** One row of `tether list` / `GET /api/runs`, read from the visibility store. */
export interface RunSummary {
  runId: string;
  /** The goal, from the run's memo (its first 200 characters: `startRun` sets it, the run itself when started otherwise). */
  goal: string;
  state: string;
  steps: number;
  costUsd: number;
  model: string;
  emergencyStop: boolean;
  consecutiveErrors: number;
  startedAt: string;
  closedAt: string | null;
  executionStatus: string;
}

/** Lists runs newest first from Temporal's visibility API (eventually consistent): the `limit` newest by start. */
export async function listRuns(tc: TetherClient, filter: ListFilter = {}): Promise<RunSummary[]> {
  const limit = filter.limit ?? 200;
  const query = listQuery(filter);
  const first = await listed(tc, query, limit);
  if (first.length < limit) return newestFirst(first);
  // Visibility lists open runs before closed ones (closed by when they closed): a run newer than the oldest listed may
  // come later in its order. Every one of the `limit` newest started no earlier than that oldest one.
  const [oldest] = first.map((row) => row.startedAt).sort();
  const newer = await listed(tc, `(${query}) AND StartTime >= '${oldest}'`, limit * LATER_ROWS_PER_ROW);
  const byId = new Map([...first, ...newer].map((row) => [row.runId, row]));
  return newestFirst([...byId.values()]).slice(0, limit);
}

/** How many rows the second pass reads at most for each row asked for: enough for any order a store lists in. */
const LATER_ROWS_PER_ROW = 10;

function newestFirst(rows: RunSummary[]): RunSummary[] {
  return rows.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
}

/** Up to `limit` rows of `query`, in the store's order. */
async function listed(tc: TetherClient, query: string, limit: number): Promise<RunSummary[]> {
  const rows: RunSummary[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await tc.client.workflowService.listWorkflowExecutions({ namespace: tc.namespace, query, pageSize: Math.min(limit, 1000), nextPageToken });
    for (const raw of page.executions ?? []) {
      rows.push(await summarize(tc, raw));
      if (rows.length >= limit) break;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken && rows.length < limit);
  return rows;
}

type RawExecution = temporal.api.workflow.v1.IWorkflowExecutionInfo;

/** One row from a raw visibility record. Read by hand, not by the SDK's list, so one run whose memo this client cannot open never hides the others. */
async function summarize(tc: TetherClient, raw: RawExecution): Promise<RunSummary> {
  const fields = raw.searchAttributes?.indexedFields;
  const status = (STATUS[raw.status ?? 0] ?? 'UNSPECIFIED').replace('WORKFLOW_EXECUTION_STATUS_', '');
  return {
    runId: raw.execution?.workflowId ?? '',
    goal: await memoText(tc, raw.memo?.fields?.[GOAL_MEMO]),
    state: listedState(attribute<string>(fields, keys.TetherStateKey.name), status),
    steps: attribute<number>(fields, keys.TetherStepsKey.name) ?? 0,
    costUsd: attribute<number>(fields, keys.TetherCostUsdKey.name) ?? 0,
    model: attribute<string>(fields, keys.TetherModelKey.name) ?? '',
    emergencyStop: attribute<boolean>(fields, keys.TetherEmergencyStopKey.name) ?? false,
    consecutiveErrors: attribute<number>(fields, keys.TetherConsecutiveErrorsKey.name) ?? 0,
    startedAt: (optionalTsToDate(raw.startTime) ?? new Date(0)).toISOString(),
    closedAt: optionalTsToDate(raw.closeTime)?.toISOString() ?? null,
    executionStatus: status,
  };
}

/** One search attribute's value (plain JSON: search attributes never pass through codecs); undefined when absent or unreadable. */
function attribute<V>(fields: Record<string, Payload> | null | undefined, name: string): V | undefined {
  const payload = fields?.[name];
  if (!payload) return undefined;
  try {
    const value = defaultPayloadConverter.fromPayload<V | V[]>(payload);
    // The server may return a single value as a one-element list.
    return (Array.isArray(value) ? value[0] : value) ?? undefined;
  } catch {
    return undefined;
  }
}

/** A memo field as text; empty when it is missing or this client cannot decode it (another key, no key). */
async function memoText(tc: TetherClient, payload: Payload | null | undefined): Promise<string> {
  if (!payload) return '';
  const { payloadCodecs, payloadConverter } = tc.client.options.loadedDataConverter;
  try {
    let payloads = [payload as Payload];
    for (const codec of [...payloadCodecs].reverse()) payloads = await codec.decode(payloads);
    const value = payloadConverter.fromPayload(payloads[0]);
    return typeof value === 'string' ? value : '';
  } catch {
    return '';
  }
}
