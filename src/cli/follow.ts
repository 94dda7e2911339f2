import { setTimeout as sleep } from 'node:timers/promises';
import { isTerminal, type RunResult, type RunState, type RunStatus, type TranscriptMessage } from '../api/types.js';
import { getStatus, getTranscript, waitForResult, type TetherClient } from '../client/runs.js';

/** One line of `--output stream-json`: a discriminated union with start/end pairs. */
export type RunEvent =
  | { type: 'run_started'; runId: string; model: string; goal: string }
  | { type: 'step_started'; step: number }
  | { type: 'llm_result'; step: number; text: string; toolCalls: string[]; usage: RunStatus['usage'] }
  | { type: 'tool_started'; step: number; tool: string; callId: string; args: unknown }
  | { type: 'tool_finished'; step: number; tool: string; callId: string; success: boolean; output: string }
  | { type: 'warning'; message: string }
  | { type: 'state_changed'; from: RunState; to: RunState; cause?: string; question?: string }
  | { type: 'result'; result: RunResult };

export type FollowOutcome = { kind: 'ended'; result: RunResult } | { kind: 'blocked'; question: string; status: RunStatus };

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
  let seen = 0;
  let lastState: RunState = 'running';
  let lastActivity = '';
  const warnings = new Set<string>();
  let step = 0;
  for (;;) {
    opts.signal?.throwIfAborted();
    let status: RunStatus;
    try {
      status = await getStatus(tc, runId);
    } catch (err) {
      if (isQueryUnavailable(err)) {
        await sleep(opts.intervalMs ?? 300);
        continue;
      }
      throw err;
    }
    onStatus(status);
    if (status.lastActivityAt !== lastActivity || isTerminal(status.state)) {
      lastActivity = status.lastActivityAt;
      const transcript = await getTranscript(tc, runId).catch(() => [] as TranscriptMessage[]);
      for (const message of transcript.slice(seen)) {
        if (message.role === 'assistant') {
          step += 1;
          onEvent({ type: 'step_started', step });
          onEvent({ type: 'llm_result', step, text: message.content, toolCalls: (message.toolCalls ?? []).map((c) => c.name), usage: status.usage });
          for (const call of message.toolCalls ?? []) onEvent({ type: 'tool_started', step, tool: call.name, callId: call.id, args: call.args });
        } else if (message.role === 'tool') {
          onEvent({ type: 'tool_finished', step, tool: message.toolName, callId: message.toolCallId, success: message.success, output: message.content.slice(0, 2_000) });
        }
      }
      seen = Math.max(seen, transcript.length);
    }
    for (const warning of status.warnings) {
      if (warnings.has(warning)) continue;
      warnings.add(warning);
      onEvent({ type: 'warning', message: warning });
    }
    if (status.state !== lastState) {
      onEvent({ type: 'state_changed', from: lastState, to: status.state, ...(status.cause ? { cause: status.cause } : {}), ...(status.question ? { question: status.question } : {}) });
      lastState = status.state;
    }
    if (isTerminal(status.state)) {
      const result = await waitForResult(tc, runId);
      onEvent({ type: 'result', result });
      return { kind: 'ended', result };
    }
    if (status.state === 'blocked') return { kind: 'blocked', question: status.question ?? '', status };
    await sleep(opts.intervalMs ?? 300, undefined, { signal: opts.signal }).catch(() => undefined);
  }
}

/** A query can fail for a moment while no worker has picked the run up yet. */
function isQueryUnavailable(err: unknown): boolean {
  const message = (err as Error)?.message ?? '';
  return /no poller|query.*timed? ?out|deadline exceeded|workflow task.*not.*completed|not.*started/i.test(message);
}
