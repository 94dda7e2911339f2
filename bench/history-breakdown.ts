// Where a run's time goes, read from the server's own event timestamps: the
// wait for a workflow task, the worker processing it, the wait for an activity
// to be dispatched, and the activity itself.
import proto from '@temporalio/proto';
import type { temporal } from '@temporalio/proto';

const ET = proto.temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface StepBreakdown {
  /** Workflow tasks counted (one per activity completion, plus the first). */
  workflowTasks: number;
  activities: number;
  /** Mean ms per segment. */
  workflowTaskWaitMs: number;
  workflowTaskProcessingMs: number;
  activityDispatchMs: number;
  activityWorkMs: number;
  /** 95th percentile of the workflow-task wait, where pacing shows first. */
  workflowTaskWaitP95Ms: number;
}

function ms(event: HistoryEvent | undefined): number {
  const t = event?.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : Number.NaN;
}

function mean(values: number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Segments from Scheduled→Started and Started→Completed of each workflow task and each activity. */
export function breakDown(events: HistoryEvent[]): StepBreakdown {
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  const wftWait: number[] = [];
  const wftWork: number[] = [];
  const actDispatch: number[] = [];
  const actWork: number[] = [];
  for (const e of events) {
    if (e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      wftWait.push(ms(e) - ms(byId.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId ?? 0))));
    } else if (e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      wftWork.push(ms(e) - ms(byId.get(Number(e.workflowTaskCompletedEventAttributes?.startedEventId ?? 0))));
    } else if (e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      actDispatch.push(ms(e) - ms(byId.get(Number(e.activityTaskStartedEventAttributes?.scheduledEventId ?? 0))));
    } else if (e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      actWork.push(ms(e) - ms(byId.get(Number(e.activityTaskCompletedEventAttributes?.startedEventId ?? 0))));
    }
  }
  return {
    workflowTasks: wftWait.length,
    activities: actWork.length,
    workflowTaskWaitMs: mean(wftWait),
    workflowTaskProcessingMs: mean(wftWork),
    activityDispatchMs: mean(actDispatch),
    activityWorkMs: mean(actWork),
    workflowTaskWaitP95Ms: percentile(wftWait, 95),
  };
}
