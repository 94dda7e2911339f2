import { isTerminal, RUN_STATES, type RunState } from '../api/types.js';
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

/**
 * How Temporal closes a run that its own code did not end (terminated, or
 * past a workflow timeout set by hand): its `TetherState` stays what it was,
 * so these states are read from the execution's status too.
 */
const CLOSED_FROM_OUTSIDE: { state: RunState; query: string; status: string }[] = [
  { state: 'killed', query: 'Terminated', status: 'TERMINATED' },
  { state: 'timeout', query: 'TimedOut', status: 'TIMED_OUT' },
  { state: 'cancelled', query: 'Canceled', status: 'CANCELED' },
];

/**
 * Builds the visibility query for a filter; states are checked so nothing odd reaches the query.
 * A run that continued as new is one run: only its latest execution is listed.
 */
export function listQuery(filter: ListFilter): string {
  const clauses = ["WorkflowType = 'agentRun'", "ExecutionStatus != 'ContinuedAsNew'"];
  if (filter.state) {
    if (!RUN_STATES.includes(filter.state as RunState)) {
      throw new TetherError(`unknown state "${filter.state}": use one of ${RUN_STATES.join(', ')}`, 'invalid');
    }
    clauses.push(stateClause(filter.state as RunState));
  }
  if (filter.emergencyStop !== undefined) {
    clauses.push(filter.emergencyStop ? "TetherEmergencyStop = true AND ExecutionStatus = 'Running'" : `TetherEmergencyStop = false`);
  }
  if (filter.forkOf !== undefined) {
    if (/['"\\\p{Cc}]/u.test(filter.forkOf)) throw new TetherError(`invalid run id "${filter.forkOf}" to list forks of`, 'invalid');
    clauses.push(`TetherForkOf = '${filter.forkOf}'`);
  }
  if (filter.open) clauses.push("ExecutionStatus = 'Running'");
  return clauses.join(' AND ');
}

/** A state that lasts only while the run is open holds only for open executions; a terminal one may also come from Temporal closing the run. */
function stateClause(state: RunState): string {
  if (!isTerminal(state)) return `TetherState = '${state}' AND ExecutionStatus = 'Running'`;
  const closedAs = CLOSED_FROM_OUTSIDE.find((c) => c.state === state);
  return closedAs ? `(TetherState = '${state}' OR ExecutionStatus = '${closedAs.query}')` : `TetherState = '${state}'`;
}

/**
 * The state a list shows for an execution: its `TetherState`, unless Temporal
 * closed it while that still said it was open (terminated, timed out).
 */
export function listedState(published: string | undefined, executionStatus: string): string {
  const open = executionStatus === 'RUNNING' || executionStatus === 'CONTINUED_AS_NEW';
  if (open) return published ?? 'running';
  if (published && isTerminal(published as RunState)) return published;
  return CLOSED_FROM_OUTSIDE.find((c) => c.status === executionStatus)?.state ?? executionStatus.toLowerCase();
}
