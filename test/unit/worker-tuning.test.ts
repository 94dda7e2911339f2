import { describe, expect, it } from 'vitest';
import { workerTuningFromEnv, workflowStackTracesFromEnv } from '../../src/worker-tuning.js';

describe('workerTuningFromEnv', () => {
  it('keeps the SDK defaults when nothing is set', () => {
    expect(workerTuningFromEnv({})).toEqual({});
  });

  it('maps each variable to its worker option', () => {
    expect(
      workerTuningFromEnv({
        TETHER_WORKER_CACHED_WORKFLOWS: '2000',
        TETHER_WORKER_WORKFLOW_TASK_SLOTS: '8',
        TETHER_WORKER_ACTIVITY_SLOTS: '300',
        TETHER_WORKER_WORKFLOW_POLLERS: '4',
        TETHER_WORKER_ACTIVITY_POLLERS: '6',
        TETHER_WORKER_THREADS: '2',
      }),
    ).toEqual({
      maxCachedWorkflows: 2000,
      maxConcurrentWorkflowTaskExecutions: 8,
      maxConcurrentActivityTaskExecutions: 300,
      maxConcurrentWorkflowTaskPolls: 4,
      maxConcurrentActivityTaskPolls: 6,
      workflowThreadPoolSize: 2,
    });
  });

  it('caps the workflow pollers at fewer slots, as the SDK requires', () => {
    expect(workerTuningFromEnv({ TETHER_WORKER_WORKFLOW_TASK_SLOTS: '4' })).toEqual({
      maxConcurrentWorkflowTaskExecutions: 4,
      maxConcurrentWorkflowTaskPolls: 4,
    });
  });

  it('refuses a value that is not a whole number in range, naming the variable', () => {
    expect(() => workerTuningFromEnv({ TETHER_WORKER_ACTIVITY_SLOTS: 'lots' })).toThrow(/TETHER_WORKER_ACTIVITY_SLOTS/);
    expect(() => workerTuningFromEnv({ TETHER_WORKER_WORKFLOW_TASK_SLOTS: '1' })).toThrow(/at least 2/);
    expect(() => workerTuningFromEnv({ TETHER_WORKER_THREADS: '1.5' })).toThrow(/whole number/);
  });
});

describe('workflowStackTracesFromEnv', () => {
  it('keeps stack traces unless told "off"', () => {
    expect(workflowStackTracesFromEnv({})).toBe(true);
    expect(workflowStackTracesFromEnv({ TETHER_WORKER_STACK_TRACES: 'on' })).toBe(true);
    expect(workflowStackTracesFromEnv({ TETHER_WORKER_STACK_TRACES: ' off ' })).toBe(false);
  });

  it('refuses anything else, naming the variable', () => {
    expect(() => workflowStackTracesFromEnv({ TETHER_WORKER_STACK_TRACES: 'false' })).toThrow(/TETHER_WORKER_STACK_TRACES must be "on" or "off", got "false"/);
  });
});
