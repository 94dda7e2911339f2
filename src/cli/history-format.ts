import proto, { type temporal as protoTypes } from '@temporalio/proto';

const { temporal } = proto;

type HistoryEvent = protoTypes.api.history.v1.IHistoryEvent;

export interface EventLine {
  id: number;
  time: string;
  type: string;
  details: string;
}

/** A one-line reading of a history event: its kind and the names that say what happened. */
export function describeEvent(event: HistoryEvent): EventLine {
  const type = (temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? 'UNKNOWN').replace(/^EVENT_TYPE_/, '');
  const seconds = Number(event.eventTime?.seconds ?? 0);
  const nanos = event.eventTime?.nanos ?? 0;
  return { id: Number(event.eventId ?? 0), time: new Date(seconds * 1000 + Math.floor(nanos / 1e6)).toISOString(), type, details: details(event) };
}

function details(e: HistoryEvent): string {
  const a = e.activityTaskScheduledEventAttributes;
  if (a) return `${a.activityType?.name ?? ''} (activity ${a.activityId})`;
  if (e.activityTaskStartedEventAttributes) return `attempt ${e.activityTaskStartedEventAttributes.attempt}`;
  if (e.activityTaskFailedEventAttributes) return e.activityTaskFailedEventAttributes.failure?.message ?? '';
  if (e.activityTaskTimedOutEventAttributes) return e.activityTaskTimedOutEventAttributes.failure?.message ?? 'timed out';
  if (e.workflowExecutionSignaledEventAttributes) return `signal ${e.workflowExecutionSignaledEventAttributes.signalName}`;
  if (e.workflowExecutionUpdateAcceptedEventAttributes) return `update ${e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest?.input?.name ?? ''}`;
  if (e.workflowExecutionUpdateCompletedEventAttributes) return 'update completed';
  if (e.upsertWorkflowSearchAttributesEventAttributes) {
    return Object.keys(e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields ?? {}).join(', ');
  }
  if (e.timerStartedEventAttributes) return `timer ${e.timerStartedEventAttributes.timerId}`;
  if (e.workflowExecutionFailedEventAttributes) {
    const f = e.workflowExecutionFailedEventAttributes.failure;
    return `${f?.applicationFailureInfo?.type ?? ''}: ${f?.message ?? ''}`;
  }
  if (e.workflowExecutionStartedEventAttributes)
    return `${e.workflowExecutionStartedEventAttributes.workflowType?.name ?? ''} on ${e.workflowExecutionStartedEventAttributes.taskQueue?.name ?? ''}`;
  if (e.startChildWorkflowExecutionInitiatedEventAttributes) return `child ${e.startChildWorkflowExecutionInitiatedEventAttributes.workflowId}`;
  if (e.workflowTaskFailedEventAttributes) return e.workflowTaskFailedEventAttributes.failure?.message ?? '';
  return '';
}
