import { describe, expect, it } from 'vitest';
import { COUNTER_REFRESH_MS, type SearchAttributeValue, VisibilityPolicy } from '../../src/run/visibility-policy.js';

const COUNTERS = new Set(['Steps', 'CostUsd']);
const START = 1_000_000;

function values(entries: Record<string, SearchAttributeValue>): Map<string, SearchAttributeValue> {
  return new Map(Object.entries(entries));
}

function policy(published: Record<string, SearchAttributeValue> = {}, batched = true): VisibilityPolicy {
  return new VisibilityPolicy({ counters: COUNTERS, published: values(published), now: START, batched });
}

describe('which search attributes a run upserts', () => {
  it('upserts nothing its start request already set', () => {
    const p = policy({ State: 'running', Steps: 0, CostUsd: 0 });
    expect(p.due(values({ State: 'running', Steps: 0, CostUsd: 0 }), START)).toEqual([]);
  });

  it('publishes a change of state at once, with the counters that changed since', () => {
    const p = policy({ State: 'running', Steps: 0, CostUsd: 0 });
    expect(p.due(values({ State: 'running', Steps: 1, CostUsd: 0.5 }), START + 100)).toEqual([]);
    expect(p.due(values({ State: 'completed', Steps: 2, CostUsd: 0.5 }), START + 200)).toEqual(['State', 'Steps', 'CostUsd']);
    expect(p.due(values({ State: 'completed', Steps: 2, CostUsd: 0.5 }), START + 300)).toEqual([]);
  });

  it('publishes counters alone once an interval has passed since the last upsert, and only what changed', () => {
    const p = policy({ State: 'running', Steps: 0, CostUsd: 0 });
    expect(p.due(values({ State: 'running', Steps: 1, CostUsd: 0 }), START + COUNTER_REFRESH_MS - 1)).toEqual([]);
    expect(p.due(values({ State: 'running', Steps: 2, CostUsd: 0 }), START + COUNTER_REFRESH_MS)).toEqual(['Steps']);
    expect(p.due(values({ State: 'running', Steps: 3, CostUsd: 0 }), START + COUNTER_REFRESH_MS + 1)).toEqual([]);
    expect(p.due(values({ State: 'running', Steps: 3, CostUsd: 0.1 }), START + 2 * COUNTER_REFRESH_MS)).toEqual(['Steps', 'CostUsd']);
  });

  it("an urgent upsert restarts the counters' interval", () => {
    const p = policy({ State: 'running', Steps: 0 });
    expect(p.due(values({ State: 'paused', Steps: 0 }), START + 4_000)).toEqual(['State']);
    expect(p.due(values({ State: 'paused', Steps: 1 }), START + COUNTER_REFRESH_MS + 1)).toEqual([]);
    expect(p.due(values({ State: 'paused', Steps: 1 }), START + 4_000 + COUNTER_REFRESH_MS)).toEqual(['Steps']);
  });

  it('upserts everything the start did not set, at once, when a list filters on some of it', () => {
    const p = policy({});
    expect(p.due(values({ State: 'running', Steps: 0, CostUsd: 0 }), START)).toEqual(['State', 'Steps', 'CostUsd']);
  });

  it('as runs recorded before batching did: every change at once, nothing taken from the start request', () => {
    const p = policy({ State: 'running', Steps: 0 }, false);
    expect(p.due(values({ State: 'running', Steps: 0 }), START)).toEqual(['State', 'Steps']);
    expect(p.due(values({ State: 'running', Steps: 1 }), START + 1)).toEqual(['Steps']);
  });
});
