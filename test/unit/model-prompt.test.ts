import { MissingToolResultsError, type ModelMessage, streamText } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../src/api/types.js';
import { type ModelPrompt, toModelPrompt } from '../../src/llm/messages.js';

/** The transcript as AI SDK messages, the way Tether handed it to `streamText` before it built the prompt itself. */
function asSdkMessages(transcript: TranscriptMessage[]): ModelMessage[] {
  return transcript.map((m): ModelMessage => {
    if (m.role === 'system' || m.role === 'user') return { role: m.role, content: m.content } as ModelMessage;
    if (m.role === 'assistant')
      return {
        role: 'assistant',
        content: [
          ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
          ...(m.toolCalls ?? []).map((c) => ({ type: 'tool-call' as const, toolCallId: c.id, toolName: c.name, input: c.args ?? {} })),
        ],
      };
    return { role: 'tool', content: [{ type: 'tool-result', toolCallId: m.toolCallId, toolName: m.toolName, output: { type: 'text', value: m.content } }] };
  });
}

/** The prompt the AI SDK's own conversion gives a model for these messages. */
async function sdkPrompt(system: string, transcript: TranscriptMessage[]): Promise<ModelPrompt> {
  let seen: ModelPrompt = [];
  const model = new MockLanguageModelV3({
    doStream: async (options) => {
      seen = options.prompt;
      return {
        stream: new ReadableStream({
          start(c) {
            c.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: { inputTokens: {}, outputTokens: {} } } as never);
            c.close();
          },
        }),
      };
    },
  });
  await streamText({ model, system, messages: asSdkMessages(transcript), allowSystemInMessages: true }).consumeStream();
  return seen;
}

const call = (id: string, path: string) => ({ id, name: 'read_file', args: { path } });
const transcript: TranscriptMessage[] = [
  { role: 'user', content: 'the goal', source: 'goal' },
  { role: 'assistant', content: '', toolCalls: [call('c1', 'a'), call('c2', 'b')] },
  { role: 'tool', toolCallId: 'c1', toolName: 'read_file', content: 'A', success: true },
  { role: 'tool', toolCallId: 'c2', toolName: 'read_file', content: 'B', success: true },
  { role: 'assistant', content: 'thinking aloud', toolCalls: [{ id: 'c3', name: 'shell', args: undefined }] },
  { role: 'tool', toolCallId: 'c3', toolName: 'shell', content: 'bad arguments', success: false },
  { role: 'system', content: 'summary of earlier turns' },
  { role: 'user', content: 'a steer', source: 'steer' },
  { role: 'assistant', content: 'done' },
] as TranscriptMessage[];

describe('the prompt Tether builds for the model', () => {
  it('is the prompt the AI SDK would have built from the same transcript', async () => {
    expect(toModelPrompt('the system prompt', transcript)).toEqual(await sdkPrompt('the system prompt', transcript));
  });

  it('refuses a tool call without its result, as the SDK does', () => {
    const open = transcript.slice(0, 3);
    expect(() => toModelPrompt('s', open)).toThrow(MissingToolResultsError);
    expect(() => toModelPrompt('s', [...open, { role: 'user', content: 'steer', source: 'steer' } as TranscriptMessage])).toThrow(MissingToolResultsError);
  });
});
