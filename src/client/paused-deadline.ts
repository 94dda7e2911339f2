import { PAUSED_STATES, type RunStatus } from '../api/types.js';

/**
 * A status with its deadline as of `nowMs`. A paused run's deadline moves on
 * with the clock (the pause does not use up its time), but a query answers
 * with the workflow's time as of its last task, which stands still while the
 * run waits: the status says when that was (`asOf`), and the deadline is moved
 * on by what has passed since. Pure.
 */
export function withCurrentDeadline(status: RunStatus, nowMs: number): RunStatus {
  if (!status.asOf || !(PAUSED_STATES as readonly string[]).includes(status.state)) return status;
  const waited = nowMs - Date.parse(status.asOf);
  if (!(waited > 0)) return status;
  return { ...status, deadline: new Date(Date.parse(status.deadline) + waited).toISOString() };
}
