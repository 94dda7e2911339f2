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
  /** Activity tasks (remote activities) counted; local activities are not among them. */
  activities: number;
  /** Local activities (their `core_local_activity` markers); their time is inside the workflow task that ran them. */
  localActivities: number;
  /** Server clock: the first event to the last (the execution's start to its end), ms. */
  historySpanMs: number;
  /** Mean ms per segment: per workflow task for the first two, per activity task for the last two. */
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

/** The middle value (the lower of the two middle ones for an even count, as `percentile(values, 50)`). */
export const median = (values: number[]): number => percentile(values, 50);

/** Segments from Scheduled→Started and Started→Completed of each workflow task and each activity. */
export function breakDown(events: HistoryEvent[]): StepBreakdown {
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  const wftWait: number[] = [];
  const wftWork: number[] = [];
  const actDispatch: number[] = [];
  const actWork: number[] = [];
  let localActivities = 0;
  for (const e of events) {
    if (e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      wftWait.push(ms(e) - ms(byId.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId ?? 0))));
    } else if (e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      wftWork.push(ms(e) - ms(byId.get(Number(e.workflowTaskCompletedEventAttributes?.startedEventId ?? 0))));
    } else if (e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      actDispatch.push(ms(e) - ms(byId.get(Number(e.activityTaskStartedEventAttributes?.scheduledEventId ?? 0))));
    } else if (e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      actWork.push(ms(e) - ms(byId.get(Number(e.activityTaskCompletedEventAttributes?.startedEventId ?? 0))));
    } else if (e.eventType === ET.EVENT_TYPE_MARKER_RECORDED && e.markerRecordedEventAttributes?.markerName === 'core_local_activity') {
      localActivities++;
    }
  }
  return {
    workflowTasks: wftWait.length,
    activities: actWork.length,
    localActivities,
    historySpanMs: events.length ? ms(events.at(-1)) - ms(events[0]) : 0,
    workflowTaskWaitMs: mean(wftWait),
    workflowTaskProcessingMs: mean(wftWork),
    activityDispatchMs: mean(actDispatch),
    activityWorkMs: mean(actWork),
    workflowTaskWaitP95Ms: percentile(wftWait, 95),
  };
}

/** Each field's median over several runs' breakdowns (the runs of a bench's rounds). */
export function medianBreakdown(runs: StepBreakdown[]): StepBreakdown {
  const first = runs[0];
  if (!first) throw new Error('medianBreakdown: no runs');
  return Object.fromEntries(Object.keys(first).map((k) => [k, median(runs.map((r) => r[k as keyof StepBreakdown]))])) as unknown as StepBreakdown;
}
