/** The environment variables of DESIGN.md that say how to reach Temporal. */
export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
}

/** The task queue of a worker, a run and a CLI that no TETHER_TASK_QUEUE names. */
export const DEFAULT_TASK_QUEUE = 'tether';

/**
 * How long the server holds a run's workflow task, query or Update for the
 * worker that has the run cached (its sticky queue) before it gives it to any
 * worker on the run's queue. After that worker dies unannounced (a SIGKILL, a
 * lost machine), everything about the run waits this long; a client's wait for
 * a worker's answer must outlast it. The SDK's default, set by name so the
 * client can count on it.
 */
export const STICKY_QUEUE_TIMEOUT_MS = 10_000;

/**
 * How to reach Temporal, from `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE` and
 * `TETHER_TASK_QUEUE`. Pure (the caller hands in the environment), so the
 * client, the worker and the doctor share it without loading one another.
 */
export function temporalSettings(env: Readonly<Record<string, string | undefined>>): TemporalSettings {
  return {
    address: env.TEMPORAL_ADDRESS || 'localhost:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.TETHER_TASK_QUEUE || DEFAULT_TASK_QUEUE,
  };
}
