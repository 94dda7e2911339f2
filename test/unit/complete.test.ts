import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { classifyLlmError, ProviderStreamError } from '../../src/llm/classify.js';
import { complete } from '../../src/llm/complete.js';

type Part = Record<string, unknown>;

/** A model whose stream sends these parts, as a provider's adapter hands them to the AI SDK. */
function streaming(parts: Part[]) {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: new ReadableStream({
        start(c) {
          for (const part of parts) c.enqueue(part as never);
          c.close();
        },
      }),
    }),
  });
}

const ask = (model: MockLanguageModelV3) =>
  complete(
    {
      model,
      transcript: [{ role: 'user', content: 'say something useful about the weather', source: 'goal' }],
      tools: ['finish'],
      abortSignal: new AbortController().signal,
    },
    { stream: true, onChunk: () => {} },
  );
const text = (delta: string): Part[] => [
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta },
  { type: 'text-end', id: 't' },
];
const finish = (usage: Part): Part => ({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage });

describe('a model call through the AI SDK', () => {
  it('keeps the usage the provider reports', async () => {
    const reply = await ask(streaming([...text('Sunny.'), finish({ inputTokens: { total: 12 }, outputTokens: { total: 3 } })]));
    expect(reply.usage).toEqual({ inputTokens: 12, outputTokens: 3, totalTokens: 15 });
    expect(reply.usageEstimated).toBeUndefined();
  });

  it('estimates the usage from the text when the provider reports none, and says so', async () => {
    const reply = await ask(streaming([...text('x'.repeat(400)), finish({ inputTokens: {}, outputTokens: {} })]));
    expect(reply.usageEstimated).toBe(true);
    expect(reply.usage.outputTokens).toBeGreaterThanOrEqual(100);
    expect(reply.usage.inputTokens).toBeGreaterThan(0);
  });

  it('says a tool call whose arguments broke off at the output limit was cut off, not just malformed', async () => {
    const reply = await ask(
      streaming([
        { type: 'tool-input-start', id: 'c1', toolName: 'finish' },
        { type: 'tool-input-delta', id: 'c1', delta: '{"summary": "a long' },
        { type: 'tool-input-end', id: 'c1' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'finish', input: '{"summary": "a long' },
        { type: 'finish', finishReason: { unified: 'length', raw: 'length' }, usage: { inputTokens: { total: 1 }, outputTokens: { total: 1 } } },
      ]),
    );
    expect(reply.finishReason).toBe('length');
    expect(reply.toolCalls[0]?.argsError).toContain('cut off at the output limit');
  });

  it('fails a stream that ended without the provider saying why (a clean close mid-reply) as malformed, so it is asked again whole', async () => {
    // As Anthropic's adapter ends a stream cut before its message_delta: finished, for "other", with no stop reason.
    const cut = (parts: Part[]) => [
      ...parts,
      { type: 'finish', finishReason: { unified: 'other', raw: undefined }, usage: { inputTokens: {}, outputTokens: {} } },
    ];
    for (const parts of [
      cut(text('I will write the file and then I will also')),
      cut([
        { type: 'tool-input-start', id: 'c1', toolName: 'finish' },
        { type: 'tool-input-delta', id: 'c1', delta: '{"summary": "par' },
      ]),
    ]) {
      const err = await ask(streaming(parts)).catch((e: unknown) => e);
      expect(classifyLlmError(err)).toMatchObject({ kind: 'malformed', message: expect.stringContaining('no stop reason') });
    }
    // A stop reason the SDK does not know is still one the provider gave.
    const odd = await ask(
      streaming([...text('Done.'), { type: 'finish', finishReason: { unified: 'other', raw: 'pause_turn' }, usage: { inputTokens: {}, outputTokens: {} } }]),
    );
    expect(odd).toMatchObject({ text: 'Done.', finishReason: 'other' });
  });

  it("turns an error the provider sends inside its stream into one that keeps the provider's words", async () => {
    const failing = streaming([...text('Partly'), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]);
    const err = await ask(failing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderStreamError);
    expect(classifyLlmError(err)).toMatchObject({ kind: 'server', message: expect.stringContaining('(overloaded_error): Overloaded') });
  });
});
