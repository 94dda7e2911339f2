import { allHandlersFinished, ApplicationFailure, condition, makeContinueAsNewFunc, patched, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import { FLEET_MEMO, FLEET_NOT_STOPPED, fleetStateQuery, setFleetStopUpdate, type FleetState } from '../api/fleet.js';
import { fleetStateSchema, payloadProblem, setFleetStopSchema } from '../api/message-schemas.js';

/**
 * Holds the fleet's emergency-stop flag. Clients read it when they start a run
 * (a run started while the fleet is stopped starts stopped) and set it when an
 * operator trips or clears the whole fleet. Its input and Update are checked:
 * a malformed one is refused, never a failed workflow task. The flag is also
 * in the workflow's memo, so a client reads it with no worker running (a
 * query needs one): starting a run must not wait for a worker.
 */
export async function fleetControl(initial?: FleetState): Promise<void> {
  let state: FleetState = parseInitial(initial);
  setHandler(fleetStateQuery, () => state);
  setHandler(
    setFleetStopUpdate,
    (payload) => {
      const { active, reason } = setFleetStopSchema.parse(payload);
      // Tripping a stopped fleet again gives it a new reason; it has been stopped since the first trip.
      const since = state.active && state.since ? state.since : new Date().toISOString();
      state = active ? { active: true, reason: reason ?? 'fleet emergency stop', since } : FLEET_NOT_STOPPED;
      if (patched('fleet-memo')) upsertMemo({ [FLEET_MEMO]: state });
      return state;
    },
    {
      validator: (payload: unknown) => {
        const parsed = setFleetStopSchema.safeParse(payload);
        if (!parsed.success)
          throw ApplicationFailure.create({ type: 'ControlRejected', message: `invalid setFleetStop: ${payloadProblem(parsed.error)}`, nonRetryable: true });
      },
    },
  );
  await condition(() => workflowInfo().continueAsNewSuggested);
  await condition(allHandlersFinished);
  await makeContinueAsNewFunc<typeof fleetControl>({ memo: { [FLEET_MEMO]: state } })(state);
}

function parseInitial(initial: unknown): FleetState {
  if (initial === undefined || initial === null) return FLEET_NOT_STOPPED;
  const parsed = fleetStateSchema.safeParse(initial);
  if (!parsed.success)
    throw ApplicationFailure.create({ type: 'InvalidFleetState', message: `invalid fleet state: ${payloadProblem(parsed.error)}`, nonRetryable: true });
  return parsed.data;
}
