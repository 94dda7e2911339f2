import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes } from '@temporalio/workflow';
import * as keys from '../api/search-attributes.js';
import type { RunState } from '../run/run-state.js';

/**
 * Keeps the run's search attributes current, upserting only what changed so
 * a step adds at most one small event to the history.
 */
export function createVisibility(run: RunState) {
  const last = new Map<string, unknown>();
  return function publish(): void {
    const current: SearchAttributeUpdatePair[] = [
      { key: keys.TetherStateKey, value: run.state },
      { key: keys.TetherEmergencyStopKey, value: run.safety.active },
      { key: keys.TetherConsecutiveErrorsKey, value: run.safety.errors },
      { key: keys.TetherCostUsdKey, value: Math.round(run.costUsd * 1e6) / 1e6 },
      { key: keys.TetherStepsKey, value: run.step },
      { key: keys.TetherModelKey, value: run.spec.model },
    ];
    const changed = current.filter((pair) => last.get(pair.key.name) !== pair.value);
    for (const pair of changed) last.set(pair.key.name, pair.value);
    if (changed.length) upsertSearchAttributes(changed);
  };
}
