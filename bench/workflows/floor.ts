import { proxyActivities } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '30s' });

/** The engine's floor: the same number of activities as an agent run, doing nothing. */
export async function floorWorkflow(activities: number): Promise<void> {
  for (let i = 0; i < activities; i++) await noop();
}
