import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import * as keys from '../api/search-attributes.js';
import type { RunState } from '../run/run-state.js';
import { type SearchAttributeValue, VisibilityPolicy } from '../run/visibility-policy.js';
import { leanHistory } from './lean-history.js';

type Published = [SearchAttributeUpdatePair['key'], SearchAttributeValue];

/** Every search attribute the run keeps current, with its value now, in the order they are upserted. */
function currentValues(run: RunState): Published[] {
  return [
    [keys.TetherStateKey, run.state],
    // A run that ended while stopped waits for no clear: `TetherEmergencyStop = true` lists only runs that do.
    [keys.TetherEmergencyStopKey, run.safety.active && !(run.ended && patched('ended-run-not-stopped'))],
    [keys.TetherConsecutiveErrorsKey, run.safety.errors],
    [keys.TetherCostUsdKey, Math.round(run.costUsd * 1e6) / 1e6],
    [keys.TetherStepsKey, run.step],
    [keys.TetherModelKey, run.spec.model],
  ];
}

/** Keeps the run's search attributes current, upserting only what changed (src/run/visibility-policy.ts). */
export function createVisibility(run: RunState) {
  const startedWith = workflowInfo().typedSearchAttributes;
  const published = new Map<string, SearchAttributeValue>();
  // Runs recorded before the lean history upserted every attribute at their start, whatever the start set.
  if (leanHistory()) {
    for (const [key] of currentValues(run)) {
      const value = startedWith.get(key);
      if (value !== undefined) published.set(key.name, value as SearchAttributeValue);
    }
  }
  const policy = new VisibilityPolicy(published);
  return function publish(): void {
    const current = currentValues(run);
    const due = new Set(policy.due(new Map(current.map(([key, value]) => [key.name, value]))));
    if (!due.size) return;
    upsertSearchAttributes(current.filter(([key]) => due.has(key.name)).map(([key, value]) => ({ key, value }) as SearchAttributeUpdatePair));
  };
}
