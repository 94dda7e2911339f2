import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * The search attributes of DESIGN.md: part of the contract, written by the
 * workflow and read by the client. @temporalio/common only, so the workflow
 * bundle may load it. They bypass payload codecs: never put secrets in them.
 */
export const TetherStateKey = defineSearchAttributeKey('TetherState', SearchAttributeType.KEYWORD);
export const TetherEmergencyStopKey = defineSearchAttributeKey('TetherEmergencyStop', SearchAttributeType.BOOL);
export const TetherConsecutiveErrorsKey = defineSearchAttributeKey('TetherConsecutiveErrors', SearchAttributeType.INT);
export const TetherCostUsdKey = defineSearchAttributeKey('TetherCostUsd', SearchAttributeType.DOUBLE);
export const TetherStepsKey = defineSearchAttributeKey('TetherSteps', SearchAttributeType.INT);
export const TetherModelKey = defineSearchAttributeKey('TetherModel', SearchAttributeType.KEYWORD);
/** Set on a fork when it starts: the id of the run it was forked from, so `TetherForkOf = '<id>'` lists a run's forks. */
export const TetherForkOfKey = defineSearchAttributeKey('TetherForkOf', SearchAttributeType.KEYWORD);

/** Every Tether search attribute, in the order the dev server registers them. */
export const TETHER_SEARCH_ATTRIBUTES = [
  TetherStateKey,
  TetherEmergencyStopKey,
  TetherConsecutiveErrorsKey,
  TetherCostUsdKey,
  TetherStepsKey,
  TetherModelKey,
  TetherForkOfKey,
] as const;
