import { describe, expect, it } from 'vitest';
import { parseRunSpec } from '../../src/api/spec.js';
import { emptyUsage } from '../../src/api/types.js';
import { finalStatus, statusAtEnd } from '../../src/client/closed-status.js';
import { splitAddress } from '../../src/client/tcp-probe.js';

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
