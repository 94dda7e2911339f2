import { describe, expect, it } from 'vitest';
import {
  historyRoomProblem,
  jsonBytes,
  MAX_HISTORY_BYTES_FOR_MESSAGES,
  MAX_REPLY_ARGS_BYTES,
  MAX_SPEC_BYTES,
  MAX_TOOL_CALLS_PER_REPLY,
  MAX_TRANSCRIPT_BYTES,
  utf8Bytes,
} from '../../src/api/payload-limits.js';
import { InvalidRunSpecError, parseRunSpec } from '../../src/api/spec.js';
import type { ToolCall, TranscriptMessage } from '../../src/api/types.js';
import { boundReply } from '../../src/llm/reply-limits.js';
import { TranscriptCache, TranscriptCacheMiss } from '../../src/llm/transcript-cache.js';
import { admitToolCall } from '../../src/run/tool-admission.js';
import { fitTranscript } from '../../src/run/transcript-fit.js';
import { Transcript } from '../../src/run/transcript.js';

const write = (id: string, content: string): ToolCall => ({ id, name: 'write_file', args: { path: 'f.txt', content } });

describe('payload sizes', () => {
  it('counts UTF-8 bytes of JSON, escapes and astral characters included', () => {
    expect(utf8Bytes('aé€😀')).toBe(1 + 2 + 3 + 4);
    expect(jsonBytes({ a: '\n' })).toBe('{"a":"\\n"}'.length);
  });
});

describe('a model reply that would not fit a payload', () => {
  it('drops arguments past the reply budget and marks the call, so admission refuses it with a clear error', () => {
    const huge = write('c1', 'x'.repeat(10_000_000));
    const small = write('c2', 'fine');
    const bounded = boundReply({ text: 'writing', toolCalls: [huge, small] });
    expect(jsonBytes(bounded)).toBeLessThan(MAX_REPLY_ARGS_BYTES + 10_000);
    expect(bounded.toolCalls[0]).toEqual({ id: 'c1', name: 'write_file', args: undefined, argsBytes: expect.any(Number) });
    expect(bounded.toolCalls[1]).toBe(small);
    const admission = admitToolCall(bounded.toolCalls[0]!, ['write_file', 'finish'], null);
    expect(admission).toMatchObject({
      kind: 'refused',
      result: { success: false, error: expect.stringMatching(/^arguments too large \(9\.5 MiB\).*write a large file in parts/i) },
    });
  });

  it('counts the budget across calls: many medium calls cannot add up past it', () => {
    const calls = Array.from({ length: 10 }, (_, i) => write(`c${i}`, 'y'.repeat(60_000)));
    const bounded = boundReply({ text: '', toolCalls: calls });
    expect(bounded.toolCalls.filter((c) => c.argsBytes === undefined).length).toBe(4);
    expect(jsonBytes(bounded)).toBeLessThan(MAX_REPLY_ARGS_BYTES + 10_000);
  });

  it('keeps at most a fixed number of calls and cuts long text, saying so', () => {
    const calls = Array.from({ length: 500 }, (_, i) => ({ id: `c${i}`, name: 'shell', args: { command: 'true' } }));
    const bounded = boundReply({ text: 'z'.repeat(1_000_000), toolCalls: calls });
    expect(bounded.toolCalls).toHaveLength(MAX_TOOL_CALLS_PER_REPLY);
    expect(bounded.text).toMatch(/436 further tool calls were dropped/);
    expect(bounded.text).toMatch(/reply text cut/);
    expect(bounded.text.length).toBeLessThan(70_000);
  });
});

describe('a transcript carried whole', () => {
  const goal: TranscriptMessage = { role: 'user', content: 'goal', source: 'goal' };
  const turn = (i: number, size: number): TranscriptMessage[] => [
    { role: 'assistant', content: '', toolCalls: [{ id: `c${i}`, name: 'shell', args: { command: `echo ${'é'.repeat(size)}` } }] },
    { role: 'tool', toolCallId: `c${i}`, toolName: 'shell', content: '€'.repeat(size), success: true },
  ];

  it('is left alone when it fits', () => {
    const messages = [goal, ...turn(1, 10)];
    expect(fitTranscript(messages, MAX_TRANSCRIPT_BYTES)).toEqual({ messages, changed: false });
  });

  it('shortens long messages, oldest first, until it fits; the goal stays', () => {
    const messages = [goal, ...Array.from({ length: 20 }, (_, i) => turn(i, 50_000)).flat()];
    expect(jsonBytes(messages)).toBeGreaterThan(4 * MAX_TRANSCRIPT_BYTES);
    const fitted = fitTranscript(messages, MAX_TRANSCRIPT_BYTES);
    expect(fitted.changed).toBe(true);
    expect(jsonBytes(fitted.messages)).toBeLessThanOrEqual(MAX_TRANSCRIPT_BYTES);
    expect(fitted.messages).toHaveLength(messages.length);
    expect(fitted.messages[0]).toEqual(goal);
    expect(fitted.messages.at(-1)!.content).toBe('€'.repeat(50_000));
    expect(fitted.messages[2]!.content).toMatch(/characters cut to fit the run's payload limit/);
  });

  it('drops the oldest turns when shortening is not enough, never orphaning a tool result', () => {
    const messages = [goal, ...Array.from({ length: 20_000 }, (_, i) => turn(i, 100)).flat()];
    const fitted = fitTranscript(messages, MAX_TRANSCRIPT_BYTES);
    expect(jsonBytes(fitted.messages)).toBeLessThanOrEqual(MAX_TRANSCRIPT_BYTES);
    expect(fitted.messages[0]).toEqual(goal);
    expect(fitted.messages[1]).toMatchObject({ role: 'user', source: 'notice', content: expect.stringMatching(/earlier messages were dropped/) });
    expect(fitted.messages[2]!.role).toBe('assistant');
  });

  it('rewrites the run transcript as a new epoch, taking queued steers in first', () => {
    const t = new Transcript('goal');
    for (let i = 0; i < 30; i++) for (const m of turn(i, 40_000)) t.push(m);
    t.queueSteer('a steer');
    expect(t.fit(MAX_TRANSCRIPT_BYTES)).toBe(true);
    expect(t.rewrites).toBe(1);
    expect(jsonBytes(t.snapshot())).toBeLessThanOrEqual(MAX_TRANSCRIPT_BYTES + 200);
    expect(t.messages.at(-1)).toMatchObject({ role: 'user', source: 'steer', content: 'a steer' });
    expect(t.fit(MAX_TRANSCRIPT_BYTES)).toBe(false);
  });
});

describe('the system prompt travels once per transcript', () => {
  const delta = (from: number, messages: TranscriptMessage[], length: number) => ({ epoch: 0, from, messages, length });
  const m = (content: string): TranscriptMessage => ({ role: 'user', content });

  it('is kept with the transcript and used for calls that send only a delta', () => {
    const cache = new TranscriptCache();
    expect(cache.resolve('r', delta(0, [m('a')], 1), { system: 'be brief' }).system).toBe('be brief');
    expect(cache.resolve('r', delta(1, [m('b')], 2), { cached: true })).toEqual({ messages: [m('a'), m('b')], system: 'be brief' });
  });

  it('is a cache miss when the worker never got it, so the workflow resends everything', () => {
    const cache = new TranscriptCache();
    cache.resolve('r', delta(0, [m('a')], 1));
    expect(() => cache.resolve('r', delta(1, [m('b')], 2), { cached: true })).toThrow(TranscriptCacheMiss);
  });
});

describe('a RunSpec over the limits', () => {
  it('is refused with the field and the limit', () => {
    expect(() => parseRunSpec({ goal: 'g', model: 'scripted:x', limits: { maxContextChars: 50_000_000 } })).toThrow(/limits\.maxContextChars: .*500000/);
    expect(() => parseRunSpec({ goal: 'g', model: 'scripted:x', verify: { command: 'x'.repeat(200_000) } })).toThrow(/verify\.command/);
  });

  it('is refused as a whole when its fields each fit but together would not', () => {
    const big = '€'.repeat(150_000);
    expect(() => parseRunSpec({ goal: big, model: 'scripted:x', system: big })).toThrow(InvalidRunSpecError);
    expect(() => parseRunSpec({ goal: big, model: 'scripted:x', system: big })).toThrow(
      new RegExp(`RunSpec is \\d+ KiB as JSON; at most ${MAX_SPEC_BYTES / 1024} KiB`),
    );
  });
});

describe('room in a run history for a message', () => {
  it('lets a message in while the history stays under the cap, and says why not past it, naming both sizes and the way out', () => {
    expect(historyRoomProblem(10 * 1024 * 1024, 500_000)).toBeNull();
    expect(historyRoomProblem(MAX_HISTORY_BYTES_FOR_MESSAGES - 1_000, 1_000)).toBeNull();
    const problem = historyRoomProblem(MAX_HISTORY_BYTES_FOR_MESSAGES - 1_000, 500_000);
    expect(problem).toContain("the run's history holds 40.0 MiB");
    expect(problem).toContain('this message (489 KiB)');
    expect(problem).toContain('tether fork');
  });
});
