import { setTimeout as sleep } from 'node:timers/promises';
import { isTerminal, type PendingToolCall, type RunResult, type RunStatus, type TranscriptMessage } from '../api/types.js';
import { getStatus, getTranscript, type TetherClient, waitForResult } from '../client/runs.js';
import { type RunEvent, RunEventTracker } from './run-events.js';

/** How following a run stopped: it ended, or it waits for a person (a question, or a tool call to approve). */
export type FollowOutcome =
  | { kind: 'ended'; result: RunResult }
  | { kind: 'blocked'; question: string; status: RunStatus }
  | { kind: 'awaiting_tool_approval'; call: PendingToolCall; status: RunStatus };

/**
 * Follows a run by polling its status and transcript (both queries, so it
 * works from any machine that reaches Temporal) until it ends or blocks.
 */
export async function followRun(
  tc: TetherClient,
  runId: string,
  onEvent: (event: RunEvent) => void,
  onStatus: (status: RunStatus) => void,
  opts: { intervalMs?: number; signal?: AbortSignal } = {},
): Promise<FollowOutcome> {
  const tracker = new RunEventTracker();
  const interval = opts.intervalMs ?? 300;
  for (;;) {
    opts.signal?.throwIfAborted();
    const status = await getStatus(tc, runId).catch((err: unknown) => {
      if (isQueryUnavailable(err)) return null;
      throw err;
    });
    if (!status) {
      await sleep(interval);
      continue;
    }
    onStatus(status);
    if (tracker.wantsTranscript(status)) {
      const transcript = await getTranscript(tc, runId).catch(() => [] as TranscriptMessage[]);
      for (const event of tracker.transcriptEvents(status, transcript)) onEvent(event);
    }
    for (const event of tracker.statusEvents(status)) onEvent(event);
    if (isTerminal(status.state)) {
      const result = await waitForResult(tc, runId);
      onEvent({ type: 'result', result });
      return { kind: 'ended', result };
    }
    if (status.state === 'blocked') return { kind: 'blocked', question: status.question ?? '', status };
    if (status.state === 'awaiting_tool_approval' && status.pendingToolCall) return { kind: 'awaiting_tool_approval', call: status.pendingToolCall, status };
    await sleep(interval, undefined, { signal: opts.signal }).catch(() => undefined);
  }
}

/** A query can fail for a moment while no worker has picked the run up yet. */
function isQueryUnavailable(err: unknown): boolean {
  const message = (err as Error)?.message ?? '';
  return /no poller|query.*timed? ?out|deadline exceeded|workflow task.*not.*completed|not.*started/i.test(message);
}
