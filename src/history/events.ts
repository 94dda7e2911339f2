/**
 * A run's history events, decoded (payloads opened, failures read) and
 * flattened to the few kinds Tether reads. Everything after decoding works on
 * these plain values, so it is pure and unit-tested without a server.
 */

interface Base {
  /** Event id within its execution. */
  id: number;
  /** Epoch milliseconds. */
  at: number;
  /** The SDK's event type name without its prefix, e.g. ACTIVITY_TASK_SCHEDULED. */
  type: string;
}

/** How an execution closed. */
export type ExecutionEnd = 'completed' | 'failed' | 'cancelled' | 'terminated' | 'timed_out' | 'continued_as_new';

export type HistoryEvent = Base &
  (
    | { kind: 'workflow_started'; workflowType: string; continuedFrom: string | null; input: unknown[] }
    | { kind: 'workflow_closed'; end: ExecutionEnd; result?: unknown; error?: string; failureType?: string }
    | { kind: 'activity_scheduled'; activityId: string; activityType: string; summary: string | null; input: unknown }
    | { kind: 'activity_started'; scheduledId: number; attempt: number; lastError: string | null }
    | { kind: 'activity_completed'; scheduledId: number; result: unknown }
    | { kind: 'activity_failed'; scheduledId: number; error: string; timedOut: boolean }
    | { kind: 'activity_cancelled'; scheduledId: number }
    | {
        kind: 'local_activity';
        activityType: string;
        summary: string | null;
        attempt: number;
        /** When the SDK first scheduled it (it may have run across several workflow tasks); null in markers that do not say. */
        scheduledAt: number | null;
        completedAt: number | null;
        result: unknown;
        error: string | null;
      }
    | { kind: 'signal'; name: string; payload: unknown; identity: string | null }
    | { kind: 'update_accepted'; updateId: string; name: string; payload: unknown; identity: string | null }
    | { kind: 'update_completed'; updateId: string; error: string | null }
    | { kind: 'cancel_requested'; reason: string; identity: string | null }
    | { kind: 'child_started'; workflowType: string; workflowId: string }
    | { kind: 'child_closed'; workflowId: string; end: ExecutionEnd; result?: unknown; error?: string }
    | { kind: 'attributes_upserted'; attributes: Record<string, unknown> }
    | { kind: 'other' }
  );

/** One execution of a run: a continued-as-new chain has several, oldest first. */
export interface ExecutionEvents {
  /** Temporal's run id of this execution. */
  executionId: string;
  events: HistoryEvent[];
}
