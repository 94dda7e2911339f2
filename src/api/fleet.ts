import { defineQuery, defineUpdate } from './definitions.js';

/** The fleet-wide emergency stop, held by one long-lived workflow so it survives every process. */
export interface FleetState {
  active: boolean;
  reason: string | null;
  since: string | null;
}

export const FLEET_WORKFLOW_ID = 'tether-fleet';
/** The fleet workflow's memo field that holds its FleetState, for clients to read without a worker. */
export const FLEET_MEMO = 'fleet';
/** A fleet never stopped, or cleared. */
export const FLEET_NOT_STOPPED: FleetState = { active: false, reason: null, since: null };
export const fleetStateQuery = defineQuery<FleetState>('fleetState');
export const setFleetStopUpdate = defineUpdate<FleetState, [{ active: boolean; reason?: string }]>('setFleetStop');
