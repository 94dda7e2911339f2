import { proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '30s' });

/** The engine's floor: the same number of activities as an agent run, doing nothing. */
export async function floorWorkflow(activities: number): Promise<void> {
  for (let i = 0; i < activities; i++) await noop();
}

/** The timer queue's floor: sequential one-millisecond timers (deadlines, critic timeouts and backoff ride on it). */
export async function timerFloorWorkflow(timers: number): Promise<void> {
  for (let i = 0; i < timers; i++) await sleep(1);
}

const { model } = proxyActivities<{ model(): Promise<void> }>({ startToCloseTimeout: '30s' });

/** The chaos load's floor: an agent run's shape (a model call a step, a tool call between), with nothing but the model's latency. */
export async function loadFloorWorkflow(steps: number): Promise<void> {
  for (let i = 0; i < steps; i++) {
    await model();
    if (i < steps - 1) await noop();
  }
}

const { noop: localNoop } = proxyLocalActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '30s' });

/**
 * The floor of a bench step's shape today: a no-op activity a step (the model call) and a local no-op activity
 * between steps (`read_file`, which a Tether worker runs as a local activity).
 */
export async function shapeFloorWorkflow(steps: number): Promise<void> {
  for (let i = 0; i < steps; i++) {
    await noop();
    if (i < steps - 1) await localNoop();
  }
}
