import type { Sinks } from '@temporalio/workflow';

/**
 * Facts a workflow reports to the worker's metrics. Sinks run outside the
 * sandbox and are skipped on replay, so a replayed run never counts twice.
 */
export interface TetherSinks extends Sinks {
  metrics: {
    runStarted(model: string): void;
    runEnded(state: string, model: string, steps: number, costUsd: number): void;
    step(model: string): void;
    emergencyStop(action: 'tripped' | 'cleared', cause: 'threshold' | 'manual' | 'fleet'): void;
    control(name: string, via: 'signal' | 'update'): void;
    criticDecision(decision: string): void;
    kill(latencyMs: number): void;
  };
}
