/**
 * Whether this worker exports traces: set by `traced-worker.ts`, which the
 * bundle of a worker with tracing on preloads. Nothing else belongs here: a
 * preloaded module is frozen with all it imports, and OpenTelemetry's API must
 * stay writable for the interceptors to register their tracer.
 */
export const workerTraces = { on: false };
