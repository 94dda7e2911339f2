import { describe, expect, it } from 'vitest';
import { type SearchAttributeValue, VisibilityPolicy } from '../../src/run/visibility-policy.js';

function values(entries: Record<string, SearchAttributeValue>): Map<string, SearchAttributeValue> {
  return new Map(Object.entries(entries));
}

describe('which search attributes a run upserts', () => {
  it('upserts nothing its start request already set', () => {
    const policy = new VisibilityPolicy(values({ State: 'running', Steps: 0, EmergencyStop: false }));
    expect(policy.due(values({ State: 'running', Steps: 0, EmergencyStop: false }))).toEqual([]);
  });

  it('upserts each change once, at the step that made it, and only what changed', () => {
    const policy = new VisibilityPolicy(values({ State: 'running', Steps: 0, CostUsd: 0 }));
    expect(policy.due(values({ State: 'running', Steps: 1, CostUsd: 0.5 }))).toEqual(['Steps', 'CostUsd']);
    expect(policy.due(values({ State: 'running', Steps: 1, CostUsd: 0.5 }))).toEqual([]);
    expect(policy.due(values({ State: 'completed', Steps: 1, CostUsd: 0.5 }))).toEqual(['State']);
  });

  it('upserts everything the start did not set, and a value the start set that differs', () => {
    const policy = new VisibilityPolicy(values({ State: 'running' }));
    expect(policy.due(values({ State: 'emergency_stopped', Steps: 0, EmergencyStop: true }))).toEqual(['State', 'Steps', 'EmergencyStop']);
  });

  it('starting from nothing (runs recorded before the lean history), upserts every attribute at the first publish', () => {
    const policy = new VisibilityPolicy(new Map());
    expect(policy.due(values({ State: 'running', Steps: 0 }))).toEqual(['State', 'Steps']);
  });

  it('treats false and 0 as values, not as absent', () => {
    const policy = new VisibilityPolicy(values({ EmergencyStop: false, Steps: 0 }));
    expect(policy.due(values({ EmergencyStop: false, Steps: 0 }))).toEqual([]);
    expect(new VisibilityPolicy(new Map()).due(values({ EmergencyStop: false, Steps: 0 }))).toEqual(['EmergencyStop', 'Steps']);
  });
});
