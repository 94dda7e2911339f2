import type { InjectedSinkFunction, InjectedSinks } from '@temporalio/worker';
import type { SinkFunction, WorkflowInfo } from '@temporalio/workflow';
import type { TetherSinks } from '../api/sinks.js';

type MetricsSink = TetherSinks['metrics'];

/** Calls `fn` outside the sandbox, but only for new history: a replayed run must never count twice. */
function live<F extends SinkFunction>(fn: F): InjectedSinkFunction<F> {
  return { fn: (_info: WorkflowInfo, ...args: Parameters<F>) => fn(...args), callDuringReplay: false };
}

/**
 * The workflows' metrics sink for `Worker.create({ sinks })`. Each method is
 * listed by name so a new sink method fails to compile until it is wired.
 */
export function metricsSinks(metrics: MetricsSink): InjectedSinks<TetherSinks> {
  return {
    metrics: {
      runStarted: live(metrics.runStarted),
      runEnded: live(metrics.runEnded),
      step: live(metrics.step),
      emergencyStop: live(metrics.emergencyStop),
      control: live(metrics.control),
      criticDecision: live(metrics.criticDecision),
      kill: live(metrics.kill),
    },
  };
}
