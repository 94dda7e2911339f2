import type { ControlName } from '../api/control.js';
import type { RunResult, RunStatus } from '../api/types.js';
import { duration, usd } from './output.js';

function clock(iso: string, now: number): string {
  const ms = Date.parse(iso) - now;
  // ISO, as status prints it: a deadline may be days away, and the operator's zone is not the run's.
  const at = iso;
  return ms > 0 ? `${at} (in ${duration(ms)})` : `${at} (passed)`;
}

/** The one line a control verb prints in text mode: what happens now, in the run's own terms. Pure. */
export function confirmation(name: ControlName, s: RunStatus, now = Date.now()): string {
  const paused = s.state !== 'running' ? `; the run is ${s.state} and takes it when it resumes` : '';
  switch (name) {
    case 'steer':
      return `queued: the model sees it before its next call (step ${s.step + 1})${paused}`;
    case 'extend':
      return `extended: deadline ${clock(s.deadline, now)}, step ceiling ${s.maxSteps} (at step ${s.step})`;
    case 'kill':
      return `kill sent: the run is ending (${s.cause ?? 'killed'})`;
    case 'emergencyStop':
      return `emergency stop tripped (${s.emergencyStop.reason}): the run is ${s.state}; clear it with: tether estop clear ${s.runId}`;
    case 'clearEmergency':
      return `emergency stop cleared: the run is ${s.state} (step ${s.step})`;
    case 'approve':
      return `approved: budget ${usd(s.budgetUsd)} (spent ${usd(s.costUsd)}); the run is ${s.state}`;
    case 'answer':
      return `answered: the run is ${s.state} (step ${s.step})`;
    case 'decideTool':
      return s.pendingToolCall
        ? `decided: the run is ${s.state}; next call waiting: ${s.pendingToolCall.callId} (${s.pendingToolCall.tool})`
        : `decided: the run is ${s.state} (step ${s.step})`;
  }
}

/** How a killed run ended, once it has. */
export function killedLine(r: RunResult): string {
  return `killed: run ${r.runId} ended ${r.status} at step ${r.steps} (${usd(r.costUsd)}): ${r.cause ?? ''}`;
}
