import type { InjectedSinkFunction, InjectedSinks } from '@temporalio/worker';
import type { SinkFunction, WorkflowInfo } from '@temporalio/workflow';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions.js';
import type { TetherSinks } from '../api/sinks.js';

type MetricsSink = TetherSinks['metrics'];

/** Calls `fn` outside the sandbox, but only for new history: a replayed run must never count twice. */
function live<F extends SinkFunction>(fn: F): InjectedSinkFunction<F> {
  return { fn: (_info: WorkflowInfo, ...args: Parameters<F>) => fn(...args), callDuringReplay: false };
}

/** How many executions' ends a worker remembers, to count each once. */
const REMEMBERED_EXECUTIONS = 10_000;

/**
 * Like `live`, once per workflow execution: a workflow task that is retried
 * after its sink calls ran (a task timeout on a busy worker, or the server
 * turning a completion back) would otherwise count a run's start or end twice.
 */
function oncePerExecution<F extends SinkFunction>(fn: F): InjectedSinkFunction<F> {
  const seen = new Set<string>();
  return {
    fn: (info: WorkflowInfo, ...args: Parameters<F>) => {
      if (seen.has(info.runId)) return;
      seen.add(info.runId);
      if (seen.size > REMEMBERED_EXECUTIONS) seen.delete(seen.values().next().value as string);
      fn(...args);
    },
    callDuringReplay: false,
  };
}

/** Where workflow spans go with no exporter: a worker that exports no traces records none, but a bundle built with traces and replayed without an exporter (tests) sends its spans here, to nothing. */
const droppedSpans: InjectedSinks<OpenTelemetrySinks> = { exporter: { export: { fn: () => undefined, callDuringReplay: false } } };

/**
 * The workflows' sinks for `Worker.create({ sinks })`: the metrics, and the
 * workflow spans, exported by `spans` (src/ops/tracing.ts) or dropped.
 */
export function workflowSinks(metrics: MetricsSink, spans = droppedSpans): InjectedSinks<TetherSinks & OpenTelemetrySinks> {
  return { ...metricsSinks(metrics), ...spans };
}

/** The workflows' metrics sink. Each method is listed by name so a new sink method fails to compile until it is wired. */
export function metricsSinks(metrics: MetricsSink): InjectedSinks<TetherSinks> {
  return {
    metrics: {
      runStarted: oncePerExecution(metrics.runStarted),
      runEnded: oncePerExecution(metrics.runEnded),
      step: live(metrics.step),
      emergencyStop: live(metrics.emergencyStop),
      control: live(metrics.control),
      criticDecision: live(metrics.criticDecision),
      kill: live(metrics.kill),
    },
  };
}
