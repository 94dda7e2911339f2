import type { RunState } from '../api/types.js';
import { RUN_STATES } from '../api/types.js';
import { TetherError } from './errors.js';

/*
 * The filter of a run list and its visibility query, apart from the list
 * itself: the CLI checks a filter before it connects, without loading the
 * Temporal client.
 */

export interface ListFilter {
  state?: string;
  emergencyStop?: boolean;
  /** Only the forks of this run (the `TetherForkOf` search attribute). */
  forkOf?: string;
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
  if (filter.forkOf !== undefined) {
    if (/['"\\\p{Cc}]/u.test(filter.forkOf)) throw new TetherError(`invalid run id "${filter.forkOf}" to list forks of`, 'invalid');
    clauses.push(`TetherForkOf = '${filter.forkOf}'`);
  }
  if (filter.open) clauses.push("ExecutionStatus = 'Running'");
  return clauses.join(' AND ');
}
