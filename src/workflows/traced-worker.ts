/**
 * Preloaded into the workflow bundle of a worker that exports traces, before
 * the SDK freezes the preloaded modules (src/workflows/worker-traces.ts).
 */
import { workerTraces } from './worker-traces.js';

workerTraces.on = true;
