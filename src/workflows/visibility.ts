import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes } from '@temporalio/workflow';
import type { RunState } from '../run/run-state.js';
import {
  TetherConsecutiveErrorsKey,
  TetherCostUsdKey,
  TetherEmergencyStopKey,
  TetherModelKey,
  TetherStateKey,
  TetherStepsKey,
} from '../server/search-attributes.js';

/**
 * Keeps the run's search attributes current, upserting only what changed so
 * a step adds at most one small event to the history.
 */
export function createVisibility(run: RunState) {
  const last = new Map<string, unknown>();
  return function publish(): void {
    const pairs: SearchAttributeUpdatePair[] = [];
    const put = (key: SearchAttributeUpdatePair['key'], value: unknown) => {
      if (last.get(key.name) === value) return;
      last.set(key.name, value);
      pairs.push({ key, value } as unknown as SearchAttributeUpdatePair);
    };
    put(TetherStateKey, run.state);
    put(TetherEmergencyStopKey, run.safety.active);
    put(TetherConsecutiveErrorsKey, run.safety.errors);
    put(TetherCostUsdKey, Math.round(run.costUsd * 1e6) / 1e6);
    put(TetherStepsKey, run.step);
    put(TetherModelKey, run.spec.model);
    if (pairs.length) upsertSearchAttributes(pairs);
  };
}
