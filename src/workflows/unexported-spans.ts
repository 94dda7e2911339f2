import type { Tracer } from '@opentelemetry/api';
import { unrecordedTracer } from './tracing.js';

/*
 * Stands in for `@opentelemetry/sdk-trace-base` and `@opentelemetry/core` in
 * the workflow bundle of a worker that exports no traces (src/worker.ts,
 * `workflowBundleOptions`). Every run there takes the OpenTelemetry workflow
 * interceptors for their steps alone (src/workflows/tracing-interceptors.ts),
 * and their spans record nothing; the SDK's span machinery would otherwise be
 * evaluated afresh for every run the worker holds, at some 0.6 MiB of memory
 * and 15 ms of CPU a run (docs/operations.md, "Tracing"). The interceptors use
 * of them only what is here, and nothing here takes a step of its own.
 */

/** The provider the interceptors make for their own spans: one whose tracer records nothing, registered nowhere. */
export class BasicTracerProvider {
  addSpanProcessor(): void {}

  register(): void {}

  getTracer(): Tracer {
    return unrecordedTracer;
  }
}

/** What the interceptors hand the provider above, which never calls it. */
export class SimpleSpanProcessor {}

/** The one value of `@opentelemetry/core` the interceptors' span exporter reads. */
export const ExportResultCode = { SUCCESS: 0, FAILED: 1 } as const;
