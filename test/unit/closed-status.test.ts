import { describe, expect, it } from 'vitest';
import { howToStart } from '../../src/client/errors.js';
import { parseRunSpec } from '../../src/api/spec.js';
import { emptyUsage } from '../../src/api/types.js';
import { endedFromOutside, finalStatus, statusAtEnd } from '../../src/client/closed-status.js';
import { listedState, listQuery } from '../../src/client/list-query.js';
import { splitAddress } from '../../src/server/tcp-probe.js';

const spec = parseRunSpec({ goal: 'tidy the repo', model: 'scripted:demo', limits: { maxSteps: 7, budgetUsd: 2 } });
const startedAt = new Date('2026-01-01T10:00:00Z');
const closedAt = new Date('2026-01-01T10:05:00Z');

describe('the status of a closed run, read from what it left', () => {
  it('gives the final state and figures of its result, its limits from its spec, and its end as its deadline', () => {
    const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
    const status = statusAtEnd('r1', {
      spec,
      result: { runId: 'r1', status: 'completed', steps: 3, costUsd: 0.5, usage, summary: 'done' },
      startedAt,
      closedAt,
      steps: 3,
      costUsd: 0.5,
    });
    expect(status).toMatchObject({
      runId: 'r1',
      state: 'completed',
      step: 3,
      maxSteps: 7,
      costUsd: 0.5,
      budgetUsd: 2,
      usage,
      goal: 'tidy the repo',
      model: 'scripted:demo',
      startedAt: startedAt.toISOString(),
      deadline: closedAt.toISOString(),
    });
    expect(status.cause).toBeUndefined();
  });

  it('takes the figures a cancelled run published last, since its result holds none, and keeps the cause', () => {
    const status = statusAtEnd('r2', {
      spec,
      result: { runId: 'r2', status: 'cancelled', steps: 0, costUsd: 0, usage: emptyUsage(), cause: 'cancelled by ann' },
      startedAt,
      closedAt,
      steps: 4,
      costUsd: 0.25,
    });
    expect(status).toMatchObject({ state: 'cancelled', step: 4, costUsd: 0.25, cause: 'cancelled by ann' });
  });

  it('reads a run whose start it refused (a raw start with a bad spec) by the goal and model it was given', () => {
    const status = statusAtEnd('r3', {
      spec: { goal: 'g', model: 'gpt-4' },
      result: { runId: 'r3', status: 'failed', steps: 0, costUsd: 0, usage: emptyUsage(), cause: 'invalid RunSpec: model …' },
      startedAt,
      closedAt,
      steps: null,
      costUsd: null,
    });
    expect(status).toMatchObject({ state: 'failed', goal: 'g', model: 'gpt-4', maxSteps: 0, budgetUsd: null, cause: 'invalid RunSpec: model …' });
  });

  it('of a run Temporal closed while it went on (terminated): how it ended, and no question or held call left open', () => {
    const live = statusAtEnd('r4', {
      spec,
      result: { runId: 'r4', status: 'completed', steps: 2, costUsd: 0.1, usage: emptyUsage() },
      startedAt,
      closedAt,
      steps: 2,
      costUsd: 0.1,
    });
    const replayed = { ...live, state: 'blocked' as const, question: 'which colour?', emergencyStop: { active: true, reason: 'hold', since: 'x' } };
    const closed = { ...live, state: 'killed' as const, cause: 'terminated: by hand', deadline: closedAt.toISOString() };
    const status = endedFromOutside(replayed, closed);
    expect(status).toMatchObject({ state: 'killed', cause: 'terminated: by hand', step: 2, emergencyStop: { active: false } });
    expect(status.question).toBeUndefined();
  });

  it('records a terminate in the audit trail as a kill by "unknown", after what the run recorded itself', () => {
    const earlier = { action: 'steer' as const, by: 'ana@laptop', via: 'cli' as const, at: startedAt.toISOString(), detail: 'look again' };
    const live = {
      ...statusAtEnd('r3', {
        spec,
        result: { runId: 'r3', status: 'completed', steps: 1, costUsd: 0, usage: emptyUsage() },
        startedAt,
        closedAt,
        steps: 1,
        costUsd: 0,
      }),
      state: 'running' as const,
      audit: [earlier],
    };
    const closed = { ...live, state: 'killed' as const, cause: 'terminated: stuck for an hour' };
    expect(endedFromOutside(live, closed, closedAt).audit).toEqual([
      earlier,
      { action: 'kill', by: 'unknown', at: closedAt.toISOString(), detail: 'terminated: stuck for an hour' },
    ]);
    // Closed some other way (a workflow timeout), nothing is added.
    expect(endedFromOutside(live, { ...closed, state: 'timeout', cause: 'timed out' }).audit).toEqual([earlier]);
  });
});

describe('the state a run list shows, and the query behind a state filter', () => {
  it("is the run's own state, unless Temporal closed it while that said it was going on", () => {
    expect(listedState('running', 'RUNNING')).toBe('running');
    expect(listedState('killed', 'FAILED')).toBe('killed');
    expect(listedState('running', 'TERMINATED')).toBe('killed');
    expect(listedState('blocked', 'TIMED_OUT')).toBe('timeout');
    expect(listedState('running', 'CANCELED')).toBe('cancelled');
    expect(listedState('running', 'FAILED')).toBe('failed');
    expect(listedState(undefined, 'COMPLETED')).toBe('completed');
  });

  it('lists a run that continued as new once, open states only while open, and killed runs terminated by hand too', () => {
    expect(listQuery({})).toContain("ExecutionStatus != 'ContinuedAsNew'");
    expect(listQuery({ state: 'running' })).toContain("TetherState = 'running' AND ExecutionStatus = 'Running'");
    expect(listQuery({ state: 'killed' })).toContain("(TetherState = 'killed' OR ExecutionStatus = 'Terminated')");
    expect(listQuery({ state: 'completed' })).toContain("TetherState = 'completed'");
    expect(listQuery({ emergencyStop: true })).toContain("TetherEmergencyStop = true AND ExecutionStatus = 'Running'");
  });
});

describe('the final status a run leaves in its memo', () => {
  const left = { runId: 'r1', state: 'completed', step: 3, lastTool: 'finish' };
  it('is taken as the status of the run it names', () => {
    expect(finalStatus('r1', { memo: { finalStatus: left, warnings: [] } })).toEqual(left);
  });
  it('is not taken from a run without one, or one naming another run, or a malformed one', () => {
    expect(finalStatus('r1', { memo: undefined })).toBeNull();
    expect(finalStatus('r1', { memo: { warnings: ['x'] } })).toBeNull();
    expect(finalStatus('r2', { memo: { finalStatus: left } })).toBeNull();
    expect(finalStatus('r1', { memo: { finalStatus: 'completed' } })).toBeNull();
    expect(finalStatus('r1', { memo: { finalStatus: { runId: 'r1' } } })).toBeNull();
  });
});

describe('a Temporal address for the reachability probe', () => {
  it('reads host and port, brackets around IPv6, and the default port', () => {
    expect(splitAddress('localhost:7233')).toEqual({ host: 'localhost', port: 7233 });
    expect(splitAddress('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    expect(splitAddress('temporal.example.com')).toEqual({ host: 'temporal.example.com', port: 7233 });
  });
});

describe('how to have a server at an address the CLI cannot reach', () => {
  it('is to start one here on its port, with the flag only when it is not the default', () => {
    expect(howToStart('127.0.0.1:7233')).toBe('Start one with `tether server` (or `tether dev`), or set TEMPORAL_ADDRESS.');
    expect(howToStart('localhost:29501')).toBe('Start one with `tether server --port 29501` (or `tether dev --port 29501`), or set TEMPORAL_ADDRESS.');
    expect(howToStart('[::1]:7300')).toContain('tether server --port 7300');
  });

  it('is to check the server on another host, which no command here starts', () => {
    expect(howToStart('temporal.internal:7233')).toBe('Check that the server at temporal.internal:7233 is up, or set TEMPORAL_ADDRESS to one that is.');
  });
});
