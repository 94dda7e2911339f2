import type { WorkflowInfo } from '@temporalio/workflow';
import { describe, expect, it, vi } from 'vitest';
import type { TetherSinks } from '../../src/api/sinks.js';
import { metricsSinks } from '../../src/ops/sinks.js';

function fakeMetrics(): TetherSinks['metrics'] {
  return { runStarted: vi.fn(), runEnded: vi.fn(), step: vi.fn(), emergencyStop: vi.fn(), control: vi.fn(), criticDecision: vi.fn(), kill: vi.fn() };
}
const execution = (runId: string) => ({ runId, workflowId: 'run-1' }) as WorkflowInfo;

describe('the metrics sinks', () => {
  it('count a run ended once even when the workflow task that ended it runs again', () => {
    const metrics = fakeMetrics();
    const sinks = metricsSinks(metrics).metrics;
    sinks.runEnded.fn(execution('a'), 'completed', 'scripted:x', 2, 0.01);
    sinks.runEnded.fn(execution('a'), 'completed', 'scripted:x', 2, 0.01);
    sinks.runEnded.fn(execution('b'), 'failed', 'scripted:x', 1, 0);
    expect(metrics.runEnded).toHaveBeenCalledTimes(2);
    expect(metrics.runEnded).toHaveBeenLastCalledWith('failed', 'scripted:x', 1, 0);
  });

  it('count a run started once per execution, and never during replay', () => {
    const metrics = fakeMetrics();
    const sinks = metricsSinks(metrics).metrics;
    sinks.runStarted.fn(execution('a'), 'scripted:x');
    sinks.runStarted.fn(execution('a'), 'scripted:x');
    expect(metrics.runStarted).toHaveBeenCalledTimes(1);
    expect(sinks.runStarted.callDuringReplay).toBe(false);
    expect(sinks.step.callDuringReplay).toBe(false);
  });
});
