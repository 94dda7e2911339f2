import { CONTROL_NAMES, type ControlName, controlSchemas, salvageSignal } from '../api/control.js';
import { describeIssues } from '../api/spec.js';
import type { ExecutionEnd, ExecutionEvents, HistoryEvent } from './events.js';

/** How one activity went: its schedule, the attempt that ran last, and the errors on the way. */
export interface ActivityRecord {
  /** Index of the execution (0 = the first) it ran in. */
  execution: number;
  activityType: string;
  /** The one-line summary the workflow gave it (shown by the Temporal UI too). */
  summary: string | null;
  input: unknown;
  result?: unknown;
  scheduledAt: number;
  /** When the last attempt started; null while it waits for a worker. */
  startedAt: number | null;
  endedAt: number | null;
  /** Attempts made; only the last one's start is in the history, so earlier ones have no times. */
  attempts: number;
  /** The previous attempt's error (retries) and the final one, oldest first. */
  errors: string[];
  outcome: 'completed' | 'failed' | 'timed_out' | 'cancelled' | 'running';
}

/** A control message that reached the run, as a Signal or an accepted Update. */
export interface ControlRecord {
  execution: number;
  at: number;
  name: string;
  via: 'signal' | 'update';
  payload: unknown;
  identity: string | null;
  /** The Update's answer, when it failed; for a Signal, why the run ignored it when its payload does not read. */
  error?: string | null;
}

export interface ExecutionRecord {
  executionId: string;
  startedAt: number;
  endedAt: number | null;
  end: ExecutionEnd | 'running';
  result?: unknown;
  error?: string;
  /** A failed execution's failure type: a run's state (killed, timeout, needs_fix …) when the run ended it. */
  failureType?: string;
}

/** Everything `tether history` (and later its timeline and audit views) reads, from every execution of a run. */
export interface RunHistory {
  runId: string;
  executions: ExecutionRecord[];
  activities: ActivityRecord[];
  controls: ControlRecord[];
  /** Its children (sub-agents, critics): when each started and, once it closed, how, with its result (a sub-agent's RunResult). */
  children: Array<{
    execution: number;
    at: number;
    workflowType: string;
    workflowId: string;
    endedAt: number | null;
    end: ExecutionEnd | null;
    result?: unknown;
    error?: string;
    /** The sub-agent's report that it tripped its emergency stop: the run's call to it returned then, with what it had spent. */
    stopped?: { at: number; reason: string; costUsd: number };
  }>;
  /** Each change of the run's `TetherState` search attribute, in order (pauses are read from these). */
  states: Array<{ execution: number; at: number; state: string }>;
  /** Who asked Temporal to cancel the run, and why. */
  cancelRequest: { at: number; reason: string; identity: string | null } | null;
}

/** Reads a run's decoded history: pairs each activity's events, collects control messages and children. Pure. */
export function readRunHistory(runId: string, chain: ExecutionEvents[]): RunHistory {
  const history: RunHistory = { runId, executions: [], activities: [], controls: [], children: [], states: [], cancelRequest: null };
  for (const [index, execution] of chain.entries()) readExecution(history, index, execution);
  return history;
}

function readExecution(history: RunHistory, index: number, { executionId, events }: ExecutionEvents): void {
  const record: ExecutionRecord = { executionId, startedAt: events[0]?.at ?? 0, endedAt: null, end: 'running' };
  history.executions.push(record);
  const activities = new Map<number, ActivityRecord>();
  const updates = new Map<string, ControlRecord>();
  // A local activity runs inside a workflow task: it started no earlier than the task did.
  let taskStartedAt = record.startedAt;
  // The tool calls the model asked for, by id: a local file tool's marker names its call, the reply holds its arguments.
  const asked = new Map<string, unknown>();
  for (const event of events) {
    if (event.type === 'WORKFLOW_TASK_STARTED') taskStartedAt = event.at;
    if (event.kind === 'activity_completed') rememberToolCalls(asked, event.result);
    if (event.kind === 'local_activity') recordLocalActivity(history, index, event, taskStartedAt, asked);
    else if (event.kind === 'workflow_closed') {
      Object.assign(record, { endedAt: event.at, end: event.end, result: event.result, error: event.error, failureType: event.failureType });
      // What was still running when the execution closed (killed, terminated, cancelled mid-call) ended with it.
      for (const open of activities.values()) if (open.outcome === 'running') Object.assign(open, { endedAt: event.at, outcome: 'cancelled' });
    } else if (event.kind.startsWith('activity_')) pairActivity(history, index, activities, event);
    else if (event.kind === 'signal') {
      const error = ignoredSignal(event.name, event.payload);
      if (!error) rememberEdit(asked, event.name, event.payload);
      if (event.name === 'childEmergency') noteChildStopped(history, event.at, event.payload);
      history.controls.push({
        execution: index,
        at: event.at,
        name: event.name,
        via: 'signal',
        payload: event.payload,
        identity: event.identity,
        ...(error ? { error } : {}),
      });
    } else if (event.kind === 'update_accepted') {
      const control: ControlRecord = { execution: index, at: event.at, name: event.name, via: 'update', payload: event.payload, identity: event.identity };
      updates.set(event.updateId, control);
      history.controls.push(control);
      rememberEdit(asked, event.name, event.payload);
    } else if (event.kind === 'update_completed') {
      const control = updates.get(event.updateId);
      if (control) control.error = event.error;
    } else if (event.kind === 'cancel_requested') history.cancelRequest = { at: event.at, reason: event.reason, identity: event.identity };
    else if (event.kind === 'attributes_upserted' && typeof event.attributes.TetherState === 'string')
      history.states.push({ execution: index, at: event.at, state: event.attributes.TetherState });
    else if (event.kind === 'child_started')
      history.children.push({ execution: index, at: event.at, workflowType: event.workflowType, workflowId: event.workflowId, endedAt: null, end: null });
    else if (event.kind === 'child_closed') {
      const child = history.children.filter((c) => c.workflowId === event.workflowId).at(-1);
      if (child) Object.assign(child, { endedAt: event.at, end: event.end, result: event.result, error: event.error });
    }
  }
}

/** A sub-agent's emergency-stop report, on the child it names (the first report counts: the run's call returned on it). */
function noteChildStopped(history: RunHistory, at: number, payload: unknown): void {
  const report = (payload ?? {}) as { childId?: unknown; reason?: unknown; costUsd?: unknown };
  const child = history.children.filter((c) => c.workflowId === report.childId).at(-1);
  if (!child || child.stopped || child.endedAt !== null) return;
  const costUsd = Number(report.costUsd);
  child.stopped = { at, reason: typeof report.reason === 'string' ? report.reason : '', costUsd: Number.isFinite(costUsd) ? costUsd : 0 };
}

/**
 * A local activity as the activity record it stands for. A file tool run on
 * the worker holding the workspace (`runFileToolHere`) is the tool call its
 * result names; one that was "not here", or failed, is no call: the tool
 * activity that follows it ran the call.
 */
function recordLocalActivity(
  history: RunHistory,
  execution: number,
  event: HistoryEvent & { kind: 'local_activity' },
  startedAt: number,
  asked: Map<string, unknown>,
): void {
  const ran = event.activityType === 'runFileToolHere' ? fileToolRun(event.result, asked) : null;
  if (event.activityType === 'runFileToolHere' && !ran) return;
  history.activities.push({
    execution,
    activityType: ran ? 'runTool' : event.activityType,
    summary: event.summary,
    input: ran ? { call: ran.call } : null,
    result: ran ? ran.result : event.result,
    // A local activity longer than most of a workflow task's timeout spans several tasks: the last one's start is not its own.
    scheduledAt: event.scheduledAt ?? startedAt,
    startedAt: event.scheduledAt ?? startedAt,
    endedAt: Math.max(event.scheduledAt ?? startedAt, event.completedAt ?? event.at),
    attempts: event.attempt,
    errors: event.error ? [event.error] : [],
    outcome: event.error ? 'failed' : 'completed',
  });
}

function fileToolRun(result: unknown, asked: Map<string, unknown>): { call: unknown; result: unknown } | null {
  if (!result || typeof result !== 'object' || !('ran' in result)) return null;
  const r = result as { ran: unknown; call?: { id?: unknown } };
  const id = typeof r.call?.id === 'string' ? r.call.id : '';
  return { call: asked.get(id) ?? r.call ?? null, result: r.ran };
}

/** A person's edit of a held call (`decideTool` with `edit`): the call runs with its arguments, not the model's. */
function rememberEdit(asked: Map<string, unknown>, name: string, payload: unknown): void {
  if (name !== 'decideTool' || !payload || typeof payload !== 'object') return;
  const { decision, callId, args } = payload as { decision?: unknown; callId?: unknown; args?: unknown };
  const call = typeof callId === 'string' ? asked.get(callId) : undefined;
  if (decision === 'edit' && args !== undefined && call && typeof call === 'object') asked.set(callId as string, { ...call, args });
}

/** Notes the tool calls in a model call's result (any other activity's result has none). */
function rememberToolCalls(asked: Map<string, unknown>, result: unknown): void {
  const calls = result && typeof result === 'object' ? (result as { toolCalls?: unknown }).toolCalls : undefined;
  if (!Array.isArray(calls)) return;
  for (const call of calls)
    if (call && typeof call === 'object' && typeof (call as { id?: unknown }).id === 'string') asked.set((call as { id: string }).id, call);
}

/** Scheduled, started, then completed, failed, timed out or cancelled: all name the scheduled event's id. */
function pairActivity(history: RunHistory, execution: number, byId: Map<number, ActivityRecord>, event: HistoryEvent): void {
  if (event.kind === 'activity_scheduled') {
    const record: ActivityRecord = {
      execution,
      activityType: event.activityType,
      summary: event.summary,
      input: event.input,
      scheduledAt: event.at,
      startedAt: null,
      endedAt: null,
      attempts: 0,
      errors: [],
      outcome: 'running',
    };
    byId.set(event.id, record);
    history.activities.push(record);
    return;
  }
  const record = 'scheduledId' in event ? byId.get(event.scheduledId) : undefined;
  if (!record) return;
  if (event.kind === 'activity_started') {
    record.startedAt = event.at;
    record.attempts = event.attempt;
    if (event.lastError) record.errors.push(event.lastError);
    return;
  }
  record.endedAt = event.at;
  if (record.startedAt !== null) record.attempts = Math.max(record.attempts, 1);
  if (event.kind === 'activity_completed') Object.assign(record, { outcome: 'completed', result: event.result });
  else if (event.kind === 'activity_failed') {
    record.outcome = event.timedOut ? 'timed_out' : 'failed';
    record.errors.push(event.error);
  } else if (event.kind === 'activity_cancelled') record.outcome = 'cancelled';
}

/**
 * A control message as the run reads it: a Signal after the salvage the run
 * applies to it (src/workflows/control.ts). Null for a name that is no control
 * message; the issue when its payload does not read. Whether the run's state
 * refused it (a clear with no stop) is not known from the message alone.
 */
export function readControl(name: string, payload: unknown, via: ControlRecord['via']): { name: ControlName; data: unknown } | { issue: string } | null {
  if (!(CONTROL_NAMES as readonly string[]).includes(name)) return null;
  const control = name as ControlName;
  // A stop Signal with no payload still stops the run (salvageStopSignal): the salvage comes before the check.
  const read = via === 'signal' ? salvageSignal(control, payload) : payload;
  if (read === undefined || read === null) return { issue: 'a payload is required' };
  const parsed = controlSchemas[control].safeParse(read);
  return parsed.success ? { name: control, data: parsed.data } : { issue: describeIssues(parsed.error) };
}

/** Why the run ignored a control Signal whose payload does not read; null when it reads. */
function ignoredSignal(name: string, payload: unknown): string | null {
  const read = readControl(name, payload, 'signal');
  return read && 'issue' in read ? `ignored: ${name}: ${read.issue}` : null;
}
