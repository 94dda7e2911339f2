import { defineQuery, defineUpdate } from './definitions.js';

/** The fleet-wide emergency stop, held by one long-lived workflow so it survives every process. */
export interface FleetState {
  active: boolean;
  reason: string | null;
  since: string | null;
}

export const FLEET_WORKFLOW_ID = 'tether-fleet';
export const fleetStateQuery = defineQuery<FleetState>('fleetState');
export const setFleetStopUpdate = defineUpdate<FleetState, [{ active: boolean; reason?: string }]>('setFleetStop');
