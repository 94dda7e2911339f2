import type { Client } from '@temporalio/client';
import type { LoadedDataConverter } from '@temporalio/common';
import { decodeSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes.js';
import { decodeArrayFromPayloads, decodeOptionalFailureToOptionalError, decodeUserMetadata } from '@temporalio/common/lib/internal-non-workflow/index.js';
import proto, { type temporal } from '@temporalio/proto';
import { EncryptionKeyError } from '../api/payload-refusal.js';
import type { ExecutionEnd, HistoryEvent } from './events.js';

type RawEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;
type Failure = temporal.api.failure.v1.IFailure | null | undefined;

const EVENT_TYPES = proto.temporal.api.enums.v1.EventType;

/** The data converter a client was built with (payload codecs included), to open what the history holds. */
export function converterOf(client: Client): LoadedDataConverter {
  return client.options.loadedDataConverter;
}

/** The event's type name without its prefix. */
export function eventTypeName(event: RawEvent): string {
  return (EVENT_TYPES[event.eventType ?? 0] ?? 'UNKNOWN').replace(/^EVENT_TYPE_/, '');
}

function millis(event: RawEvent): number {
  return Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
}

/** An undecodable payload reads as nothing; one this process lacks the key for fails the reading, which would show a run of empty steps. */
function unlessKeyMissing<T>(fallback: T): (err: unknown) => T {
  return (err) => {
    if (err instanceof EncryptionKeyError) throw err;
    return fallback;
  };
}

/** Decodes one event: payloads are opened with the converter (an undecodable payload reads as null; a missing key fails the reading). */
export async function decodeEvent(converter: LoadedDataConverter, event: RawEvent): Promise<HistoryEvent> {
  const base = { id: Number(event.eventId ?? 0), at: millis(event), type: eventTypeName(event) };
  const values = async (payloads: Payloads) => decodeArrayFromPayloads(converter, payloads?.payloads ?? []).catch(unlessKeyMissing([] as unknown[]));
  const first = async (payloads: Payloads) => (await values(payloads))[0] ?? null;
  const message = async (failure: Failure) => {
    if (!failure) return '';
    const err = await decodeOptionalFailureToOptionalError(converter, failure).catch(unlessKeyMissing(undefined));
    return err?.message ?? failure.message ?? '';
  };
  const e = event;
  if (e.workflowExecutionStartedEventAttributes) {
    const a = e.workflowExecutionStartedEventAttributes;
    return {
      ...base,
      kind: 'workflow_started',
      workflowType: a.workflowType?.name ?? '',
      continuedFrom: a.continuedExecutionRunId || null,
      input: await values(a.input),
    };
  }
  const closed = await closing(e, first, message);
  if (closed) return { ...base, kind: 'workflow_closed', ...closed };
  const child = await childClosing(e, first, (failure) => decodeOptionalFailureToOptionalError(converter, failure).catch(unlessKeyMissing(undefined)));
  if (child) return { ...base, kind: 'child_closed', ...child };
  if (e.activityTaskScheduledEventAttributes) {
    const a = e.activityTaskScheduledEventAttributes;
    const metadata = await decodeUserMetadata(converter, e.userMetadata).catch(() => ({ staticSummary: undefined }));
    return {
      ...base,
      kind: 'activity_scheduled',
      activityId: a.activityId ?? '',
      activityType: a.activityType?.name ?? '',
      summary: metadata.staticSummary ?? null,
      input: await first(a.input),
    };
  }
  if (e.activityTaskStartedEventAttributes) {
    const a = e.activityTaskStartedEventAttributes;
    const lastError = a.lastFailure ? await message(a.lastFailure) : null;
    return { ...base, kind: 'activity_started', scheduledId: Number(a.scheduledEventId), attempt: a.attempt ?? 1, lastError };
  }
  if (e.activityTaskCompletedEventAttributes) {
    const a = e.activityTaskCompletedEventAttributes;
    return { ...base, kind: 'activity_completed', scheduledId: Number(a.scheduledEventId), result: await first(a.result) };
  }
  if (e.activityTaskFailedEventAttributes || e.activityTaskTimedOutEventAttributes) {
    const a = e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes!;
    const timedOut = Boolean(e.activityTaskTimedOutEventAttributes);
    const error = timedOut && notTakenInTime(a.failure) ? WORKER_GONE : (await message(a.failure)) || 'timed out';
    return { ...base, kind: 'activity_failed', scheduledId: Number(a.scheduledEventId), error, timedOut };
  }
  if (e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER) return localActivity(converter, base, e, first, message);
  if (e.activityTaskCanceledEventAttributes)
    return { ...base, kind: 'activity_cancelled', scheduledId: Number(e.activityTaskCanceledEventAttributes.scheduledEventId) };
  return messageEvent(base, e, first);
}

/** The marker the SDK records for a local activity's outcome. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

interface LocalActivityData {
  activity_type?: unknown;
  attempt?: unknown;
  complete_time?: Timestamp | null;
  original_schedule_time?: Timestamp | null;
}

type Timestamp = { seconds?: unknown; nanos?: unknown };

const msOf = (t: Timestamp | null | undefined) => (t ? Number(t.seconds) * 1000 + Math.floor(Number(t.nanos ?? 0) / 1e6) : null);

/** The SDK's own JSON about a local activity (type, attempt, completion time); written by the SDK, not by the payload codec. */
function markerData(bytes: Uint8Array | null | undefined): LocalActivityData {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(bytes ?? []).toString('utf8'));
    return parsed && typeof parsed === 'object' ? (parsed as LocalActivityData) : {};
  } catch {
    return {};
  }
}

/** A local activity's marker: its type, summary, attempt, completion and result, as an activity's events say them. */
async function localActivity(
  converter: LoadedDataConverter,
  base: { id: number; at: number; type: string },
  e: RawEvent,
  first: (p: Payloads) => Promise<unknown>,
  message: (f: Failure) => Promise<string>,
): Promise<HistoryEvent> {
  const a = e.markerRecordedEventAttributes!;
  const data = markerData(a.details?.data?.payloads?.[0]?.data);
  const metadata = await decodeUserMetadata(converter, e.userMetadata).catch(() => ({ staticSummary: undefined }));
  return {
    ...base,
    kind: 'local_activity',
    activityType: typeof data.activity_type === 'string' ? data.activity_type : '',
    summary: metadata.staticSummary ?? null,
    attempt: Number(data.attempt) || 1,
    scheduledAt: msOf(data.original_schedule_time),
    completedAt: msOf(data.complete_time),
    result: await first(a.details?.result),
    error: a.failure ? await message(a.failure) : null,
  };
}

/** Signals, Updates, cancel requests and children. */
async function messageEvent(base: { id: number; at: number; type: string }, e: RawEvent, first: (p: Payloads) => Promise<unknown>): Promise<HistoryEvent> {
  if (e.workflowExecutionSignaledEventAttributes) {
    const a = e.workflowExecutionSignaledEventAttributes;
    return { ...base, kind: 'signal', name: a.signalName ?? '', payload: await first(a.input), identity: a.identity || null };
  }
  if (e.workflowExecutionUpdateAcceptedEventAttributes) {
    const request = e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest;
    const payload = await first(request?.input?.args);
    return {
      ...base,
      kind: 'update_accepted',
      updateId: request?.meta?.updateId ?? '',
      name: request?.input?.name ?? '',
      payload,
      identity: request?.meta?.identity || null,
    };
  }
  if (e.workflowExecutionUpdateCompletedEventAttributes) {
    const a = e.workflowExecutionUpdateCompletedEventAttributes;
    return { ...base, kind: 'update_completed', updateId: a.meta?.updateId ?? '', error: a.outcome?.failure?.message ?? null };
  }
  if (e.workflowExecutionCancelRequestedEventAttributes) {
    const a = e.workflowExecutionCancelRequestedEventAttributes;
    return { ...base, kind: 'cancel_requested', reason: a.cause ?? '', identity: a.identity || null };
  }
  if (e.childWorkflowExecutionStartedEventAttributes) {
    const a = e.childWorkflowExecutionStartedEventAttributes;
    return { ...base, kind: 'child_started', workflowType: a.workflowType?.name ?? '', workflowId: a.workflowExecution?.workflowId ?? '' };
  }
  if (e.upsertWorkflowSearchAttributesEventAttributes) {
    // Search attributes bypass payload codecs, so they decode without the converter (a bad one reads as nothing).
    const fields = e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields;
    const decoded = (() => {
      try {
        return decodeSearchAttributes(fields as Parameters<typeof decodeSearchAttributes>[0]);
      } catch {
        return {};
      }
    })();
    const attributes = Object.fromEntries(Object.entries(decoded).map(([k, v]) => [k, Array.isArray(v) && v.length === 1 ? v[0] : v]));
    return { ...base, kind: 'attributes_upserted', attributes };
  }
  return { ...base, kind: 'other' };
}

/**
 * How a child closed, when `e` says so: a run's sub-agent that ended other
 * than completed carries its RunResult in its failure's details, as a run does.
 */
async function childClosing(
  e: RawEvent,
  first: (p: Payloads) => Promise<unknown>,
  failureOf: (f: Failure) => Promise<Error | undefined>,
): Promise<{ workflowId: string; end: ExecutionEnd; result?: unknown; error?: string } | null> {
  if (e.childWorkflowExecutionCompletedEventAttributes) {
    const a = e.childWorkflowExecutionCompletedEventAttributes;
    return { workflowId: a.workflowExecution?.workflowId ?? '', end: 'completed', result: await first(a.result) };
  }
  if (e.childWorkflowExecutionFailedEventAttributes) {
    const a = e.childWorkflowExecutionFailedEventAttributes;
    const err = await failureOf(a.failure);
    const details = (err as { details?: unknown[] } | undefined)?.details;
    return { workflowId: a.workflowExecution?.workflowId ?? '', end: 'failed', error: err?.message ?? a.failure?.message ?? '', result: details?.[0] };
  }
  const other = e.childWorkflowExecutionCanceledEventAttributes
    ? { end: 'cancelled' as const, at: e.childWorkflowExecutionCanceledEventAttributes }
    : e.childWorkflowExecutionTerminatedEventAttributes
      ? { end: 'terminated' as const, at: e.childWorkflowExecutionTerminatedEventAttributes }
      : e.childWorkflowExecutionTimedOutEventAttributes
        ? { end: 'timed_out' as const, at: e.childWorkflowExecutionTimedOutEventAttributes }
        : null;
  return other && { workflowId: other.at.workflowExecution?.workflowId ?? '', end: other.end };
}

/** How an execution closed, when `e` closes it. */
async function closing(
  e: RawEvent,
  first: (p: Payloads) => Promise<unknown>,
  message: (f: Failure) => Promise<string>,
): Promise<{ end: ExecutionEnd; result?: unknown; error?: string; failureType?: string } | null> {
  if (e.workflowExecutionCompletedEventAttributes) return { end: 'completed', result: await first(e.workflowExecutionCompletedEventAttributes.result) };
  if (e.workflowExecutionFailedEventAttributes) {
    const failure = e.workflowExecutionFailedEventAttributes.failure;
    // A run's ending other than completed fails the execution with the run's state as the failure's type.
    const failureType = failure?.applicationFailureInfo?.type ?? undefined;
    return { end: 'failed', error: await message(failure), ...(failureType ? { failureType } : {}) };
  }
  if (e.workflowExecutionCanceledEventAttributes) return { end: 'cancelled' };
  if (e.workflowExecutionTerminatedEventAttributes) return { end: 'terminated', error: e.workflowExecutionTerminatedEventAttributes.reason ?? '' };
  if (e.workflowExecutionTimedOutEventAttributes) return { end: 'timed_out' };
  if (e.workflowExecutionContinuedAsNewEventAttributes) return { end: 'continued_as_new' };
  return null;
}

/**
 * Only the activities bound to the worker that holds a run's workspace wait a
 * limited time to be taken (src/workflows/activity-stubs.ts): one that was not
 * taken in time means that worker is gone, and the run moved on. Said so, it
 * does not read as a tool that ran out of time.
 */
const WORKER_GONE = "interrupted: the worker holding the run's workspace is gone (ScheduleToStart timeout); the run moved on";
/** TIMEOUT_TYPE_SCHEDULE_TO_START; a number, so reading a history need not load the proto enums. */
const SCHEDULE_TO_START = 2;

function notTakenInTime(failure: Failure): boolean {
  const type: unknown = failure?.timeoutFailureInfo?.timeoutType;
  return type === SCHEDULE_TO_START || type === 'TIMEOUT_TYPE_SCHEDULE_TO_START';
}
