import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowExecutionDescription } from '@temporalio/client';
import { isTerminal, type PendingToolCall, type RunResult, type RunStatus, type TranscriptMessage } from '../api/types.js';
import { serverGone, TetherError } from '../client/errors.js';
import { describeRun, getStatus, getTranscript, type TetherClient } from '../client/runs.js';
import { waitForResult } from '../client/run-result.js';
import { underSignal } from '../client/under-signal.js';
import { type RunEvent, RunEventTracker } from './run-events.js';

/** How following a run stopped: it ended, or it waits for a person (a question, or a tool call to approve). */
export type FollowOutcome =
  | { kind: 'ended'; result: RunResult }
  | { kind: 'blocked'; question: string; status: RunStatus }
  | { kind: 'awaiting_tool_approval'; call: PendingToolCall; status: RunStatus };

/** How often a follower asks Temporal whether the run was closed from outside (terminated), which its own status cannot say. */
const CLOSED_CHECK_MS = 2_000;

/** Why a follower waits while the server is away: the run is safe in the server's database and goes on when it is back. */
const SERVER_GONE = 'the Temporal server does not answer; the run goes on once it is back';

/**
 * Follows a run by polling its status and transcript (both queries, so it
 * works from any machine that reaches Temporal) until it ends or blocks.
 * A run no worker answers for (its worker died, none was started), or whose
 * server has gone away (stopped, restarting), is waited for, not given up on:
 * it goes on when a worker, or the server, comes back. `onWaiting` hears why
 * once when that starts, and null when the run answers again.
 */
export async function followRun(
  tc: TetherClient,
  runId: string,
  onEvent: (event: RunEvent) => void,
  onStatus: (status: RunStatus) => void,
  opts: { intervalMs?: number; signal?: AbortSignal; onWaiting?: (why: string | null) => void; tracker?: RunEventTracker } = {},
): Promise<FollowOutcome> {
  const tracker = opts.tracker ?? new RunEventTracker();
  const interval = opts.intervalMs ?? 300;
  let waiting = false;
  let last: RunStatus | null = null;
  let closedCheckedAt = Date.now();
  for (;;) {
    opts.signal?.throwIfAborted();
    const status = await underSignal(tc, opts.signal, () => getStatus(tc, runId)).catch((err: unknown) => {
      opts.signal?.throwIfAborted();
      const why = reasonToWait(err);
      if (why) {
        if (!waiting) opts.onWaiting?.(why);
        waiting = true;
        return null;
      }
      if (isQueryUnavailable(err)) return null;
      throw err;
    });
    if (!status) {
      // A run that nobody answers for can still be ended from outside (terminated in the Temporal UI).
      const closed = waiting ? await underSignal(tc, opts.signal, () => closedDescription(tc, runId)) : null;
      if (closed) return endedFromOutside(tc, runId, last, tracker, onEvent);
      await sleep(interval, undefined, { signal: opts.signal }).catch(() => undefined);
      continue;
    }
    if (waiting) opts.onWaiting?.(null);
    waiting = false;
    last = status;
    onStatus(status);
    // A run that went on (from a pause, or at its start) did so before anything it did since: that change comes first.
    const changes = tracker.statusEvents(status);
    const wentOn = (e: RunEvent) => e.type === 'state_changed' && e.to === 'running';
    for (const event of changes.filter(wentOn)) onEvent(event);
    // A call seen in an earlier transcript read has started if this later status shows the run past it.
    for (const event of tracker.callStarted(status)) onEvent(event);
    if (tracker.wantsTranscript(status)) {
      const transcript = await underSignal(tc, opts.signal, () => getTranscript(tc, runId)).catch(() => [] as TranscriptMessage[]);
      opts.signal?.throwIfAborted();
      for (const event of tracker.transcriptEvents(status, transcript)) onEvent(event);
    }
    for (const event of changes.filter((e) => !wentOn(e))) onEvent(event);
    if (isTerminal(status.state)) return ended(await waitForResult(tc, runId), tracker, onEvent);
    // A worker answers for a terminated run by replaying it, and the replay cannot see the terminate: Temporal can.
    if (Date.now() - closedCheckedAt >= CLOSED_CHECK_MS) {
      closedCheckedAt = Date.now();
      const closed = await underSignal(tc, opts.signal, () => closedDescription(tc, runId));
      if (closed) return endedFromOutside(tc, runId, status, tracker, onEvent);
    }
    if (status.state === 'blocked') return { kind: 'blocked', question: status.question ?? '', status };
    if (status.state === 'awaiting_tool_approval' && status.pendingToolCall) return { kind: 'awaiting_tool_approval', call: status.pendingToolCall, status };
    await sleep(interval, undefined, { signal: opts.signal }).catch(() => undefined);
  }
}

/** A run closed from outside: its own figures (`waitForResult` reads them), or what this follower saw last, whichever is further along. */
async function endedFromOutside(
  tc: TetherClient,
  runId: string,
  last: RunStatus | null,
  tracker: RunEventTracker,
  onEvent: (event: RunEvent) => void,
): Promise<FollowOutcome> {
  const result = await waitForResult(tc, runId);
  const steps = Math.max(result.steps, last?.step ?? 0);
  const costUsd = Math.max(result.costUsd, last?.costUsd ?? 0);
  const usage = result.usage.totalTokens || !last?.usage ? result.usage : last.usage;
  return ended({ ...result, steps, costUsd, usage }, tracker, onEvent);
}

function ended(result: RunResult, tracker: RunEventTracker, onEvent: (event: RunEvent) => void): FollowOutcome {
  for (const event of tracker.unansweredAtEnd(result)) onEvent(event);
  onEvent({ type: 'result', result });
  return { kind: 'ended', result };
}

/** Why the follower waits instead of failing: the server is away, or no worker answers for the run; null for any other failure. */
function reasonToWait(err: unknown): string | null {
  if (serverGone(err)) return SERVER_GONE;
  return err instanceof TetherError && err.code === 'unreachable' ? err.message : null;
}

/**
 * Temporal's description of the run once it has closed; null while it runs,
 * or while the server is away (it does not answer within seconds: waiting out
 * the client's own retries kept the follower from saying why it waits).
 */
async function closedDescription(tc: TetherClient, runId: string): Promise<WorkflowExecutionDescription | null> {
  const description = await describeRun(tc, runId).catch((err: unknown) => {
    if (serverGone(err)) return null;
    throw err;
  });
  return description && description.status.name !== 'RUNNING' ? description : null;
}

/** A query can fail for a moment while no worker has picked the run up yet. */
function isQueryUnavailable(err: unknown): boolean {
  const message = (err as Error)?.message ?? '';
  return /no poller|query.*timed? ?out|deadline exceeded|workflow task.*not.*completed|not.*started/i.test(message);
}
