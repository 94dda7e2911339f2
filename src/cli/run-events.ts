import { isTerminal, type PendingToolCall, type RunResult, type RunState, type RunStatus, type TranscriptMessage, type Usage } from '../api/types.js';

/** One line of `--output stream-json`: a discriminated union with start/end pairs. */
export type RunEvent =
  | { type: 'run_started'; runId: string; model: string; goal: string }
  | { type: 'step_started'; step: number }
  /** `usage`: the step's own tokens (absent for a run recorded before transcripts kept them). */
  | { type: 'llm_result'; step: number; text: string; toolCalls: string[]; usage?: Usage }
  | { type: 'tool_started'; step: number; tool: string; callId: string; args: unknown }
  | { type: 'tool_finished'; step: number; tool: string; callId: string; success: boolean; output: string }
  | { type: 'warning'; message: string }
  | { type: 'state_changed'; from: RunState; to: RunState; cause?: string; question?: string; pendingToolCall?: PendingToolCall }
  | { type: 'result'; result: RunResult }
  | ({ type: 'follow_ended' } & FollowEnded);

/** Why `run --wait` stopped following a run that goes on: the stream's last line then, in place of a result. */
export interface FollowEnded {
  runId: string;
  state: 'blocked' | 'awaiting_tool_approval' | 'continued_as_new' | 'running';
  question?: string;
  pendingToolCall?: PendingToolCall;
  /** The sub-agent whose question or call it is; answered or decided through this run. */
  waitingSubAgent?: string;
  continuedAsNew?: number;
  /** Left running at a signal: --detach-on-interrupt, or a cancel its server did not answer. */
  detached?: true;
  /** The cancel is recorded, and the run ends cancelled once a worker takes it up: none polls its queue now. */
  cancelRequested?: true;
}

/**
 * Turns what a follower polls (status, transcript) into events, each once:
 * new transcript messages become step and tool events, new warnings and
 * state changes become their own. Pure, so the CLI's output is tested without
 * a server.
 */
export class RunEventTracker {
  private seen = 0;
  private step = 0;
  /** The last step a step_started went out for: from the transcript, or earlier from its live tokens. */
  private announced = 0;
  private lastState: RunState = 'running';
  private lastActivity = '';
  private readonly warnings = new Set<string>();
  /** Calls a tool_started went out for and no tool_finished yet, by call id. */
  private readonly open = new Map<string, { step: number; tool: string }>();
  /**
   * Calls of the latest reply not known to have started: each starts once a status read after the reply shows the
   * run past it (the call before it answered, and it is not the call held for a person's decision).
   */
  private waiting: Array<{ step: number; tool: string; callId: string; args: unknown }> = [];

  /** Whether the transcript may hold something new: the run was active since, or it ended. */
  wantsTranscript(status: RunStatus): boolean {
    return status.lastActivityAt !== this.lastActivity || isTerminal(status.state);
  }

  /** The events of the messages not seen yet. */
  transcriptEvents(status: RunStatus, transcript: TranscriptMessage[]): RunEvent[] {
    this.lastActivity = status.lastActivityAt;
    const events: RunEvent[] = [];
    for (const message of transcript.slice(this.seen)) {
      if (message.role === 'assistant') {
        this.step += 1;
        const step = this.step;
        events.push(...this.stepStarted(step));
        const toolCalls = (message.toolCalls ?? []).map((c) => c.name);
        events.push({ type: 'llm_result', step, text: message.content, toolCalls, ...(message.usage ? { usage: message.usage } : {}) });
        // The status in hand was read before this reply: whether its first call runs or is held, the next one says.
        for (const call of message.toolCalls ?? []) this.waiting.push({ step, tool: call.name, callId: call.id, args: call.args });
      } else if (message.role === 'tool') {
        const { toolName: tool, toolCallId: callId, success } = message;
        const queued = this.waiting.findIndex((w) => w.callId === callId);
        // Answered, so decided (run, or denied): it and the calls before it are past their wait.
        if (queued >= 0) events.push(...this.waiting.splice(0, queued + 1).map((w) => this.started(w)));
        this.open.delete(callId);
        events.push({ type: 'tool_finished', step: this.step, tool, callId, success, output: message.content.slice(0, 2_000) });
      }
    }
    this.seen = Math.max(this.seen, transcript.length);
    return events;
  }

  private started(call: { step: number; tool: string; callId: string; args: unknown }): RunEvent {
    this.open.set(call.callId, { step: call.step, tool: call.tool });
    return { type: 'tool_started', ...call };
  }

  /**
   * The tool_started of the first waiting call, by a status read after the transcript that showed it: once the run
   * has not ended, the call is not the one held for a decision, and no call before it is still open (calls run one
   * after another). Called with every status, before the transcript read with it.
   */
  callStarted(status: RunStatus): RunEvent[] {
    const next = this.waiting[0];
    if (!next || isTerminal(status.state) || next.callId === status.pendingToolCall?.callId) return [];
    if ([...this.open.values()].some((o) => o.step === next.step)) return [];
    this.waiting.shift();
    return [this.started(next)];
  }

  /** A step_started for `step` unless one went out: a step's live tokens come before its reply reaches the transcript. */
  stepStarted(step: number): RunEvent[] {
    if (step <= this.announced) return [];
    this.announced = step;
    return [{ type: 'step_started', step }];
  }

  /**
   * A tool_finished for each call the run ended without answering (killed mid-tool, or cancelled while its
   * calls waited for an approval), so that every tool_started has its end before the result.
   */
  unansweredAtEnd(result: RunResult): RunEvent[] {
    const output = `no result: the run ended ${result.status} before this call returned`;
    const events = [...this.open].map(([callId, { step, tool }]): RunEvent => ({ type: 'tool_finished', step, tool, callId, success: false, output }));
    this.open.clear();
    return events;
  }

  /** The change to the state a run ended in, when its follower stopped before it saw the run end (a signal's cancel). */
  endedAs(result: RunResult): RunEvent[] {
    if (result.status === this.lastState) return [];
    const from = this.lastState;
    this.lastState = result.status;
    return [{ type: 'state_changed', from, to: result.status, ...(result.cause ? { cause: result.cause } : {}) }];
  }

  /** New warnings and a change of state. */
  statusEvents(status: RunStatus): RunEvent[] {
    const events: RunEvent[] = [];
    for (const warning of status.warnings) {
      if (this.warnings.has(warning)) continue;
      this.warnings.add(warning);
      events.push({ type: 'warning', message: warning });
    }
    if (status.state !== this.lastState) {
      const { question, pendingToolCall } = status;
      // An emergency stop's reason is its cause, as an ending's is.
      const cause = status.state === 'emergency_stopped' ? (status.emergencyStop.reason ?? undefined) : status.cause;
      events.push({
        type: 'state_changed',
        from: this.lastState,
        to: status.state,
        ...(cause ? { cause } : {}),
        ...(question ? { question } : {}),
        ...(pendingToolCall ? { pendingToolCall } : {}),
      });
      this.lastState = status.state;
    }
    return events;
  }
}
