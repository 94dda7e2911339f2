import { SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';

/**
 * Runs `work` in a span of its own. With the OpenTelemetry interceptors in the
 * bundle the span nests under the run's and parents the activities it starts;
 * without them the tracer is a no-op, so the workflow behaves the same either way.
 */
export function inSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  return trace.getTracer('tether').startActiveSpan(name, { attributes }, async (span) => {
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
