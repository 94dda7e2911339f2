import { ProxyTracerProvider, SpanStatusCode, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import { workerTraces } from './worker-traces.js';

/** A tracer whose spans record nothing: a provider with no delegate answers with OpenTelemetry's no-op tracer. */
export const unrecordedTracer: Tracer = new ProxyTracerProvider().getTracer('tether');

/**
 * The tracer of spans made in workflow code. Where traces are not exported its
 * spans record nothing, and cost nothing, but take the same steps: a run
 * records the same commands on every worker.
 */
function workflowTracer(): Tracer {
  return workerTraces.on ? trace.getTracer('tether') : unrecordedTracer;
}

/**
 * Runs `work` in a span of its own. On a worker that exports traces the span
 * nests under the run's and parents the activities it starts; elsewhere it
 * records nothing, and the workflow takes the same steps either way.
 */
export function inSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  return workflowTracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}
