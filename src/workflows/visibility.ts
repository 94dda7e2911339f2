import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import * as keys from '../api/search-attributes.js';
import type { RunState } from '../run/run-state.js';
import { type SearchAttributeValue, VisibilityPolicy } from '../run/visibility-policy.js';
import { leanHistory } from './lean-history.js';

const PUBLISHED_KEYS = [
  keys.TetherStateKey,
  keys.TetherEmergencyStopKey,
  keys.TetherConsecutiveErrorsKey,
  keys.TetherCostUsdKey,
  keys.TetherStepsKey,
  keys.TetherModelKey,
] as const;

/** Keeps the run's search attributes current, upserting only what changed (src/run/visibility-policy.ts). */
export function createVisibility(run: RunState) {
  const startedWith = workflowInfo().typedSearchAttributes;
  const published = new Map<string, SearchAttributeValue>();
  // Runs recorded before the lean history upserted every attribute at their start, whatever the start set.
  if (leanHistory()) {
    for (const key of PUBLISHED_KEYS) {
      const value = startedWith.get(key);
      if (value !== undefined) published.set(key.name, value);
    }
  }
  const policy = new VisibilityPolicy(published);
  return function publish(): void {
    const current = new Map<string, SearchAttributeValue>([
      [keys.TetherStateKey.name, run.state],
      [keys.TetherEmergencyStopKey.name, run.safety.active],
      [keys.TetherConsecutiveErrorsKey.name, run.safety.errors],
      [keys.TetherCostUsdKey.name, Math.round(run.costUsd * 1e6) / 1e6],
      [keys.TetherStepsKey.name, run.step],
      [keys.TetherModelKey.name, run.spec.model],
    ]);
    const due = new Set(policy.due(current));
    if (!due.size) return;
    const pairs = PUBLISHED_KEYS.filter((key) => due.has(key.name)).map((key) => ({ key, value: current.get(key.name) }) as SearchAttributeUpdatePair);
    upsertSearchAttributes(pairs);
  };
}
