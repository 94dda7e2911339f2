import { proxyActivities, sleep } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '30s' });

/** The engine's floor: the same number of activities as an agent run, doing nothing. */
export async function floorWorkflow(activities: number): Promise<void> {
  for (let i = 0; i < activities; i++) await noop();
}

/** The timer queue's floor: sequential one-millisecond timers (deadlines, critic timeouts and backoff ride on it). */
export async function timerFloorWorkflow(timers: number): Promise<void> {
  for (let i = 0; i < timers; i++) await sleep(1);
}
