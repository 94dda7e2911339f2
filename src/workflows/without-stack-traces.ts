/**
 * Preloaded into the workflow bundle of a worker started with
 * TETHER_WORKER_STACK_TRACES=off (src/worker-tuning.ts).
 *
 * The SDK records a stack trace, source-mapped, for every promise a workflow
 * creates, and keeps it while the promise is pending, for the `__stack_trace`
 * query (the Temporal UI's "Stack Trace" tab). A Tether step creates about 50
 * promises. With no frames captured, a worker holding 1,000 runs measured
 * 115 MiB less at its peak and 18 % less CPU a run (docs/operations.md,
 * "Worker tuning"); the query then answers without frames, and errors raised
 * in workflow code carry no stack. Runs, histories and replay are unchanged.
 * The limit is set before the SDK freezes the sandbox's globals, so no
 * workflow can set it back.
 */
Error.stackTraceLimit = 0;
