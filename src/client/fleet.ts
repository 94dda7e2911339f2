import { type Audit, controlSchemas, ESTOP_ALREADY_ACTIVE, ESTOP_NOT_ACTIVE } from '../api/control.js';
import { describeIssues } from '../api/spec.js';
import { FLEET_MEMO, FLEET_NOT_STOPPED, FLEET_WORKFLOW_ID, setFleetStopUpdate, type FleetState } from '../api/fleet.js';
import type { fleetControl } from '../workflows/fleet.js';
import type { WorkflowHandle } from '@temporalio/client';
import { listRuns, type RunSummary } from './list.js';
import { RunEndedError, TetherError } from './errors.js';
import { checkControlSecrets } from './run-start-check.js';
import { controlRun, deliverUpdate, type TetherClient } from './runs.js';
import { type WorkerPresence, workerPresence } from './worker-presence.js';

export interface FleetOutcome {
  action: 'trip' | 'clear';
  fleet: FleetState;
  affected: string[];
  failed: Array<{ runId: string; error: string }>;
}

/**
 * Trips or clears every open run through its Update (so each answer is
 * checked), and records the fleet flag first so runs started meanwhile follow it.
 * `audit` says who did it, in every run's audit trail.
 */
export async function fleetEmergency(tc: TetherClient, action: 'trip' | 'clear', reason = 'fleet emergency stop', audit?: Audit): Promise<FleetOutcome> {
  // Checked as each run will check it: a reason every run refuses would mark the fleet stopped while no run stops.
  const message = controlSchemas.emergencyStop.safeParse({ reason, ...(audit ? { audit } : {}) });
  if (action === 'trip' && !message.success) throw new TetherError(`emergencyStop: ${describeIssues(message.error)}`, 'invalid');
  // The reason is kept in the fleet's memo and in every stopped run's history.
  checkControlSecrets('estop', { reason, audit });
  const handle = await tc.client.workflow.start<typeof fleetControl>('fleetControl', {
    workflowId: FLEET_WORKFLOW_ID,
    taskQueue: tc.taskQueue,
    args: [],
    memo: { [FLEET_MEMO]: FLEET_NOT_STOPPED },
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  await fleetRecordKept(tc, handle, action);
  const fleet = await deliverUpdate((updateId) => handle.executeUpdate(setFleetStopUpdate, { args: [{ active: action === 'trip', reason }], updateId }));
  const runs = await listRuns(tc, { open: true, ...(action === 'clear' ? { emergencyStop: true } : {}) });
  const targets = action === 'trip' ? runs.filter((r) => !r.emergencyStop) : runs;
  const affected: string[] = [];
  const failed: FleetOutcome['failed'] = [];
  // Most runs share a queue: who polls it is read once, not once a run.
  const presences = new Map<string, Promise<WorkerPresence>>();
  const presenceOf = (taskQueue: string) => {
    if (!presences.has(taskQueue)) presences.set(taskQueue, workerPresence(tc, taskQueue));
    return presences.get(taskQueue)!;
  };
  await Promise.all(
    targets.map(async (run) => {
      try {
        const signed = audit ? { audit } : {};
        const message = action === 'trip' ? { reason, ...signed } : signed;
        await controlRun(tc, run.runId, action === 'trip' ? 'emergencyStop' : 'clearEmergency', message, presenceOf);
        affected.push(run.runId);
      } catch (err) {
        // The list lags behind the runs: one that ended since is neither stopped nor a failure, and
        // one that another stop or clear reached first (two at once) is already as asked.
        if (err instanceof RunEndedError || (err as Error).message.includes(action === 'trip' ? ESTOP_ALREADY_ACTIVE : ESTOP_NOT_ACTIVE)) return;
        failed.push({ runId: run.runId, error: (err as Error).message });
      }
    }),
  );
  return { action, fleet, affected: affected.sort(), failed };
}

/**
 * The fleet's flag is kept by a workflow that lives on the task queue it was
 * first started on: with no worker there, its Update would wait for one
 * forever. Said before anything is sent, with the queue to serve.
 */
async function fleetRecordKept(tc: TetherClient, handle: WorkflowHandle, action: 'trip' | 'clear'): Promise<void> {
  const { taskQueue } = await handle.describe();
  const presence = await workerPresence(tc, taskQueue);
  if (presence.live) return;
  throw new TetherError(
    `estop ${action} --all: the fleet's stop is kept by workflow ${FLEET_WORKFLOW_ID} on task queue "${taskQueue}", which no worker polls; ` +
      `nothing was stopped or cleared. Start a worker on that queue (\`TETHER_TASK_QUEUE=${taskQueue} tether worker\`) and try again`,
    'unreachable',
  );
}

export function listStoppedRuns(tc: TetherClient): Promise<RunSummary[]> {
  return listRuns(tc, { emergencyStop: true, open: true });
}
