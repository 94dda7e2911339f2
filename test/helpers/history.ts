import type { WorkflowHandle } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import proto, { type temporal } from '@temporalio/proto';
import { eventually } from './eventually.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The name of an event's type, e.g. EVENT_TYPE_ACTIVITY_TASK_SCHEDULED. */
export function eventType(event: HistoryEvent): string {
  return proto.temporal.api.enums.v1.EventType[event.eventType ?? 0];
}

/** The run's history, oldest event first. */
export async function historyEvents(handle: WorkflowHandle): Promise<HistoryEvent[]> {
  return (await handle.fetchHistory()).events ?? [];
}

/** The type names of the run's history events, in order. */
export async function eventTypes(handle: WorkflowHandle): Promise<string[]> {
  return (await historyEvents(handle)).map(eventType);
}

/** The activities the run scheduled, by type, in order. */
export async function scheduledActivities(handle: WorkflowHandle): Promise<string[]> {
  return (await historyEvents(handle)).flatMap((e) =>
    e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name ?? ''] : [],
  );
}

/** The names of the signals the run has received, in order. */
export async function signalsReceived(handle: WorkflowHandle): Promise<string[]> {
  return (await historyEvents(handle)).flatMap((e) =>
    e.workflowExecutionSignaledEventAttributes ? [e.workflowExecutionSignaledEventAttributes.signalName ?? ''] : [],
  );
}

/**
 * The durations (ms) of the workflow's open timers (started, neither fired
 * nor cancelled), read from its history once its last workflow task has
 * completed: with no task pending, only these timers can wake it until
 * something reaches it from outside. A test that shows a timer is not running
 * reads this instead of sleeping past the time it would have gone off.
 */
export async function openTimersAtRest(handle: WorkflowHandle, timeoutMs = 30_000): Promise<number[]> {
  const events = await eventually(
    `workflow ${handle.workflowId} to complete its workflow task`,
    () => historyEvents(handle),
    // A task retried after a failure is not written to history until it completes: only a completed one is at rest.
    (events) => [...events].reverse().find((e) => eventType(e).startsWith('EVENT_TYPE_WORKFLOW_TASK_'))?.workflowTaskCompletedEventAttributes != null,
    { timeoutMs },
  );
  const open = new Map<string, number>();
  for (const e of events) {
    const started = e.timerStartedEventAttributes;
    if (started) open.set(started.timerId ?? '', tsToMs(started.startToFireTimeout));
    const ended = e.timerFiredEventAttributes ?? e.timerCanceledEventAttributes;
    if (ended) open.delete(ended.timerId ?? '');
  }
  return [...open.values()];
}

/**
 * Waits until the run is settled: no workflow task, activity or child is
 * pending, so it can do nothing more by itself until something from outside
 * (a signal, an Update, a timer) wakes it. A test that wants to show that
 * nothing happened reads the history once the run has settled, rather than
 * sleeping and hoping.
 */
export async function settled(handle: WorkflowHandle, timeoutMs = 30_000): Promise<void> {
  await eventually(
    `run ${handle.workflowId} to settle`,
    async () => (await handle.describe()).raw,
    (raw) => !raw.pendingWorkflowTask && !raw.pendingActivities?.length && !raw.pendingChildren?.length,
    { timeoutMs },
  );
}
