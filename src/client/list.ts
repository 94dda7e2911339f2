import type { RunState } from '../api/types.js';
import { RUN_STATES } from '../api/types.js';
import {
  TetherConsecutiveErrorsKey,
  TetherCostUsdKey,
  TetherEmergencyStopKey,
  TetherModelKey,
  TetherStateKey,
  TetherStepsKey,
} from '../server/search-attributes.js';
import { TetherError, type TetherClient } from './runs.js';

/** One row of `tether list` / `GET /api/runs`, read from the visibility store. */
export interface RunSummary {
  runId: string;
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

export interface ListFilter {
  state?: string;
  emergencyStop?: boolean;
  /** Only executions Temporal still considers open. */
  open?: boolean;
  limit?: number;
}

/** Builds the visibility query for a filter; states are checked so nothing odd reaches the query. */
export function listQuery(filter: ListFilter): string {
  const clauses = ["WorkflowType = 'agentRun'"];
  if (filter.state) {
    if (!RUN_STATES.includes(filter.state as RunState)) {
      throw new TetherError(`unknown state "${filter.state}": use one of ${RUN_STATES.join(', ')}`, 'invalid');
    }
    clauses.push(`TetherState = '${filter.state}'`);
  }
  if (filter.emergencyStop !== undefined) clauses.push(`TetherEmergencyStop = ${filter.emergencyStop}`);
  if (filter.open) clauses.push("ExecutionStatus = 'Running'");
  return clauses.join(' AND ');
}

/** Lists runs newest first from Temporal's visibility API (eventually consistent). */
export async function listRuns(tc: TetherClient, filter: ListFilter = {}): Promise<RunSummary[]> {
  const rows: RunSummary[] = [];
  const limit = filter.limit ?? 200;
  for await (const info of tc.client.workflow.list({ query: listQuery(filter), pageSize: Math.min(limit, 1000) })) {
    const attrs = info.typedSearchAttributes;
    const closed = info.status.name !== 'RUNNING' && info.status.name !== 'CONTINUED_AS_NEW';
    rows.push({
      runId: info.workflowId,
      state: attrs.get(TetherStateKey) ?? (closed ? info.status.name.toLowerCase() : 'running'),
      steps: attrs.get(TetherStepsKey) ?? 0,
      costUsd: attrs.get(TetherCostUsdKey) ?? 0,
      model: attrs.get(TetherModelKey) ?? '',
      emergencyStop: attrs.get(TetherEmergencyStopKey) ?? false,
      consecutiveErrors: attrs.get(TetherConsecutiveErrorsKey) ?? 0,
      startedAt: info.startTime.toISOString(),
      closedAt: info.closeTime?.toISOString() ?? null,
      executionStatus: info.status.name,
    });
    if (rows.length >= limit) break;
  }
  rows.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  return rows;
}
