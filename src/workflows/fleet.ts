import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { fleetStateQuery, setFleetStopUpdate, type FleetState } from '../api/fleet.js';

/**
 * Holds the fleet's emergency-stop flag. Clients read it when they start a run
 * (a run started while the fleet is stopped starts stopped) and set it when an
 * operator trips or clears the whole fleet.
 */
export async function fleetControl(initial?: FleetState): Promise<void> {
  let state: FleetState = initial ?? { active: false, reason: null, since: null };
  setHandler(fleetStateQuery, () => state);
  setHandler(setFleetStopUpdate, ({ active, reason }) => {
    state = active ? { active: true, reason: reason ?? 'fleet emergency stop', since: new Date().toISOString() } : { active: false, reason: null, since: null };
    return state;
  });
  await condition(() => workflowInfo().continueAsNewSuggested);
  await condition(allHandlersFinished);
  await continueAsNew<typeof fleetControl>(state);
}
