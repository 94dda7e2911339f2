import type { WorkerOptions } from '@temporalio/worker';

/** The SDK worker limits an operator may set, by environment variable (docs/operations.md, "Worker tuning"). */
export type WorkerTuning = Pick<
  WorkerOptions,
  | 'maxCachedWorkflows'
  | 'maxConcurrentWorkflowTaskExecutions'
  | 'maxConcurrentActivityTaskExecutions'
  | 'maxConcurrentWorkflowTaskPolls'
  | 'maxConcurrentActivityTaskPolls'
  | 'workflowThreadPoolSize'
>;

const VARIABLES: Record<string, { option: keyof WorkerTuning; min: number }> = {
  TETHER_WORKER_CACHED_WORKFLOWS: { option: 'maxCachedWorkflows', min: 0 },
  TETHER_WORKER_WORKFLOW_TASK_SLOTS: { option: 'maxConcurrentWorkflowTaskExecutions', min: 2 },
  TETHER_WORKER_ACTIVITY_SLOTS: { option: 'maxConcurrentActivityTaskExecutions', min: 1 },
  TETHER_WORKER_WORKFLOW_POLLERS: { option: 'maxConcurrentWorkflowTaskPolls', min: 2 },
  TETHER_WORKER_ACTIVITY_POLLERS: { option: 'maxConcurrentActivityTaskPolls', min: 1 },
  TETHER_WORKER_THREADS: { option: 'workflowThreadPoolSize', min: 1 },
};

/**
 * The worker limits set in the environment; unset ones keep the SDK's
 * defaults. A value that is not a whole number in range stops the worker at
 * start with the variable's name, rather than running with a limit nobody chose.
 */
export function workerTuningFromEnv(env: NodeJS.ProcessEnv): Partial<WorkerTuning> {
  const tuning: Partial<WorkerTuning> = {};
  for (const [name, { option, min }] of Object.entries(VARIABLES)) {
    const raw = env[name]?.trim();
    if (!raw) continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number of at least ${min}, got "${raw}"`);
    tuning[option] = value;
  }
  // The SDK refuses more workflow pollers than workflow-task slots; a smaller slot count caps them.
  const slots = tuning.maxConcurrentWorkflowTaskExecutions;
  if (slots !== undefined && tuning.maxConcurrentWorkflowTaskPolls === undefined) tuning.maxConcurrentWorkflowTaskPolls = Math.min(10, slots);
  return tuning;
}

/**
 * TETHER_WORKER_STACK_TRACES: `on` (the default) or `off`. Off, the worker
 * bundles its workflows without the SDK's per-promise stack traces: less
 * memory and CPU a run in flight, and no frames in the `__stack_trace` query
 * (src/workflows/without-stack-traces.ts). Anything else stops the worker at
 * start, as a bad limit does.
 */
export function workflowStackTracesFromEnv(env: NodeJS.ProcessEnv): boolean {
  const raw = env.TETHER_WORKER_STACK_TRACES?.trim();
  if (!raw || raw === 'on') return true;
  if (raw === 'off') return false;
  throw new Error(`TETHER_WORKER_STACK_TRACES must be "on" or "off", got "${raw}"`);
}
