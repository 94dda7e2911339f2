/** The environment variables of DESIGN.md that say how to reach Temporal. */
export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
}

/** The task queue of a worker, a run and a CLI that no TETHER_TASK_QUEUE names. */
export const DEFAULT_TASK_QUEUE = 'tether';

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
