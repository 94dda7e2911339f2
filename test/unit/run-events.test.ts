import { describe, expect, it } from 'vitest';
import type { RunStatus, TranscriptMessage } from '../../src/api/types.js';
import { RunEventTracker } from '../../src/cli/run-events.js';

const status = (over: Partial<RunStatus> = {}): RunStatus =>
  ({
    state: 'running',
    lastActivityAt: '2026-01-01T00:00:01.000Z',
    warnings: [],
    usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 },
    ...over,
  }) as RunStatus;
const transcript: TranscriptMessage[] = [
  { role: 'user', content: 'goal', source: 'goal' },
  {
    role: 'assistant',
    content: 'listing',
    toolCalls: [{ id: 'c1', name: 'shell', args: { command: 'ls' } }],
    usage: { inputTokens: 5, outputTokens: 1, totalTokens: 6 },
  },
  { role: 'tool', toolCallId: 'c1', toolName: 'shell', content: 'a.txt', success: true },
];

describe('run events for stream-json', () => {
  it('turn each step into start, model result, tool start and tool end, in order', () => {
    const events = new RunEventTracker().transcriptEvents(status(), transcript);
    expect(events.map((e) => e.type)).toEqual(['step_started', 'llm_result', 'tool_started', 'tool_finished']);
    expect(events[3]).toEqual({ type: 'tool_finished', step: 1, tool: 'shell', callId: 'c1', success: true, output: 'a.txt' });
    // The step's own tokens, not the run's total at the time of reading.
    expect(events[1]).toMatchObject({ type: 'llm_result', step: 1, usage: { inputTokens: 5, outputTokens: 1, totalTokens: 6 } });
  });

  it('start a step at its first live token, before its reply is in the transcript, and only once', () => {
    const tracker = new RunEventTracker();
    expect(tracker.stepStarted(1)).toEqual([{ type: 'step_started', step: 1 }]);
    expect(tracker.stepStarted(1)).toEqual([]);
    expect(tracker.transcriptEvents(status(), transcript).map((e) => e.type)).toEqual(['llm_result', 'tool_started', 'tool_finished']);
  });

  it('end every call still open when the run ends, so each tool_started has its tool_finished before the result', () => {
    const tracker = new RunEventTracker();
    tracker.transcriptEvents(status(), transcript.slice(0, 2));
    // The next status shows the run past the reply: its call has started.
    expect(tracker.callStarted(status()).map((e) => e.type)).toEqual(['tool_started']);
    const result = { runId: 'r1', status: 'killed' as const, steps: 1, costUsd: 0, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } };
    expect(tracker.unansweredAtEnd(result)).toEqual([
      { type: 'tool_finished', step: 1, tool: 'shell', callId: 'c1', success: false, output: 'no result: the run ended killed before this call returned' },
    ]);
    expect(tracker.unansweredAtEnd(result)).toEqual([]);
    // A call the transcript answered is not ended twice.
    const answered = new RunEventTracker();
    answered.transcriptEvents(status(), transcript);
    expect(answered.unansweredAtEnd(result)).toEqual([]);
  });

  it('start no call held for a decision, nor those queued behind it, until the run moves past them; and end none that never started', () => {
    const reply: TranscriptMessage = {
      role: 'assistant',
      content: 'two calls',
      toolCalls: [
        { id: 'c1', name: 'shell', args: { command: 'rm -rf build' } },
        { id: 'c2', name: 'shell', args: { command: 'ls' } },
      ],
    };
    const held = status({
      state: 'awaiting_tool_approval',
      pendingToolCall: { callId: 'c1', tool: 'shell', args: {}, requestedAt: '2026-01-01T00:00:01.000Z' },
    });
    const named = (events: ReturnType<RunEventTracker['transcriptEvents']>) =>
      events.map((e) => (e.type === 'tool_started' || e.type === 'tool_finished' ? `${e.type} ${e.callId}` : e.type));
    const tracker = new RunEventTracker();
    // The status read with the reply came before it: no call is known to have started.
    expect(named(tracker.transcriptEvents(status(), [transcript[0]!, reply]))).toEqual(['step_started', 'llm_result']);
    expect(tracker.callStarted(held)).toEqual([]);
    // Approved: the first call starts; the second only once the first has answered.
    const approved = status({ lastActivityAt: '2026-01-01T00:00:02.000Z' });
    expect(named(tracker.callStarted(approved))).toEqual(['tool_started c1']);
    expect(tracker.callStarted(approved)).toEqual([]);
    const answered: TranscriptMessage = { role: 'tool', toolCallId: 'c1', toolName: 'shell', content: 'removed', success: true };
    expect(named(tracker.transcriptEvents(approved, [transcript[0]!, reply, answered]))).toEqual(['tool_finished c1']);
    expect(named(tracker.callStarted(approved))).toEqual(['tool_started c2']);
    // Killed while it held the calls: none started, so none ends.
    const killed = new RunEventTracker();
    killed.transcriptEvents(status(), [transcript[0]!, reply]);
    expect(killed.callStarted(held)).toEqual([]);
    expect(killed.callStarted(status({ state: 'killed' }))).toEqual([]);
    const result = { runId: 'r1', status: 'killed' as const, steps: 1, costUsd: 0, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } };
    expect(killed.unansweredAtEnd(result)).toEqual([]);
  });

  it('report each message once, however often the transcript is read', () => {
    const tracker = new RunEventTracker();
    tracker.transcriptEvents(status(), transcript.slice(0, 2));
    tracker.callStarted(status());
    expect(tracker.transcriptEvents(status(), transcript).map((e) => e.type)).toEqual(['tool_finished']);
  });

  it('read the transcript only when the run was active since, or has ended', () => {
    const tracker = new RunEventTracker();
    expect(tracker.wantsTranscript(status())).toBe(true);
    tracker.transcriptEvents(status(), transcript);
    expect(tracker.wantsTranscript(status())).toBe(false);
    expect(tracker.wantsTranscript(status({ state: 'completed' }))).toBe(true);
  });

  it('report each warning once and each change of state with its cause or question', () => {
    const tracker = new RunEventTracker();
    expect(tracker.statusEvents(status({ warnings: ['budget 75% used'] }))).toEqual([{ type: 'warning', message: 'budget 75% used' }]);
    expect(tracker.statusEvents(status({ warnings: ['budget 75% used'], state: 'blocked', question: 'which file?' }))).toEqual([
      { type: 'state_changed', from: 'running', to: 'blocked', question: 'which file?' },
    ]);
    expect(tracker.statusEvents(status({ warnings: ['budget 75% used'], state: 'blocked', question: 'which file?' }))).toEqual([]);
    const stopped = status({ warnings: ['budget 75% used'], state: 'emergency_stopped', emergencyStop: { active: true, reason: 'pausing', since: 'x' } });
    expect(tracker.statusEvents(stopped)).toEqual([{ type: 'state_changed', from: 'blocked', to: 'emergency_stopped', cause: 'pausing' }]);
  });
});
