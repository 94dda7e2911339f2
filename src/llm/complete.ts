import { generateText, InvalidResponseDataError, type LanguageModel, type LanguageModelUsage, streamText, wrapLanguageModel } from 'ai';
import type { ToolName } from '../api/spec.js';
import type { ToolCall, TranscriptMessage, Usage } from '../api/types.js';
import { type ModelPrompt, toModelPrompt, toolSet } from './messages.js';
import { ProviderStreamError } from './classify.js';
import type { CachedInput } from './pricing.js';

/** One model call as the provider answered it. */
export interface Completion {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  finishReason: string;
  /** The provider reported no usage (a server that ignores `stream_options`): `usage` is estimated from the text. */
  usageEstimated?: true;
  /** Prompt tokens the provider read from its cache or wrote to it, priced apart (src/llm/pricing.ts). */
  cachedInput?: CachedInput;
}

/** What to send: the model, the transcript, the tools offered; the AI SDK's own retries are always off. */
export interface CompletionRequest {
  model: LanguageModel;
  system?: string;
  transcript: TranscriptMessage[];
  tools: ToolName[];
  abortSignal: AbortSignal;
  headers?: Record<string, string>;
}

/**
 * Asks the model once, streamed (calling `onChunk` for every text delta, with
 * its text, and every tool call, so the caller can heartbeat) or, when `stream` is false, in one
 * reply. Throws whatever the provider threw, for the caller to classify.
 */
export async function complete(request: CompletionRequest, opts: { stream: boolean; onChunk: (text?: string) => void }): Promise<Completion> {
  const { model, system, transcript, tools, abortSignal, headers } = request;
  const prompt = toModelPrompt(system, transcript);
  const call = { model: withPrompt(model, prompt), messages: STAND_IN, tools: toolSet(tools), maxRetries: 0, abortSignal, headers };
  const raw = opts.stream ? await streamed(call, abortSignal, opts.onChunk) : await whole(call);
  if (abortSignal.aborted) throw abortSignal.reason;
  const { usage, ...reply } = raw.finishReason === 'length' ? { ...raw, toolCalls: raw.toolCalls.map(cutOff) } : raw;
  return usage ? { ...reply, usage } : { ...reply, usage: estimatedUsage(prompt, reply), usageEstimated: true };
}

/** A call whose arguments did not parse because the reply hit the output limit says so: the model would otherwise send the same again. */
function cutOff(call: ToolCall): ToolCall {
  if (!call.argsError) return call;
  return {
    ...call,
    argsError: `${call.argsError} (the reply was cut off at the output limit before these arguments ended: send less at once, e.g. write a large file in parts)`,
  };
}

/** Characters a token, roughly, for text in most languages and code: enough to keep a budget meaningful. */
const CHARS_PER_TOKEN = 4;

/**
 * Tokens estimated from the text, for a provider that reports none: counted
 * as free, a run with a budget would spend without limit.
 */
function estimatedUsage(prompt: ModelPrompt, reply: { text: string; toolCalls: ToolCall[] }): Usage {
  const inputTokens = Math.ceil(JSON.stringify(prompt).length / CHARS_PER_TOKEN);
  const outputTokens = Math.ceil((reply.text.length + JSON.stringify(reply.toolCalls.map((c) => [c.name, c.args])).length) / CHARS_PER_TOKEN);
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
}

/** A completion before its usage is settled: null when the provider reported none. */
type RawCompletion = Omit<Completion, 'usage'> & { usage: Usage | null };

/** What the SDK validates in place of the transcript; the model receives the prompt built from the transcript instead. */
const STAND_IN = [{ role: 'user' as const, content: 'the prompt is set by the model wrapper' }];

/** The model, receiving `prompt` whatever the SDK would send: the transcript skips the SDK's per-call validation of every message. */
function withPrompt(model: LanguageModel, prompt: ModelPrompt): LanguageModel {
  return wrapLanguageModel({
    model: model as Parameters<typeof wrapLanguageModel>[0]['model'],
    middleware: { specificationVersion: 'v3', transformParams: async ({ params }) => ({ ...params, prompt }) },
  });
}

type Call = Parameters<typeof generateText>[0];

async function whole(call: Call): Promise<RawCompletion> {
  const result = await generateText(call);
  return {
    text: result.text,
    toolCalls: result.toolCalls.map(toToolCall),
    usage: toUsage(result.totalUsage),
    finishReason: result.finishReason,
    ...cachedInputOf(result.totalUsage),
  };
}

async function streamed(call: Call, abortSignal: AbortSignal, onChunk: (text?: string) => void): Promise<RawCompletion> {
  let text = '';
  const toolCalls: ToolCall[] = [];
  let usage: LanguageModelUsage | undefined;
  let finishReason = 'unknown';
  for await (const part of streamText({ ...call, onError: () => {} }).fullStream) {
    if (part.type === 'text-delta') {
      text += part.text;
      onChunk(part.text);
    } else if (part.type === 'tool-call') {
      toolCalls.push(toToolCall(part));
      onChunk();
    } else if (part.type === 'finish') {
      usage = part.totalUsage;
      finishReason = part.finishReason;
      if (endedUnsaid(part.finishReason, part.rawFinishReason)) throw new InvalidResponseDataError({ data: undefined, message: CUT_OFF });
    } else if (part.type === 'error') {
      throw part.error instanceof Error ? part.error : new ProviderStreamError(part.error);
    } else if (part.type === 'abort') {
      throw abortSignal.reason ?? new Error('LLM call aborted');
    }
  }
  return { text, toolCalls, usage: toUsage(usage), finishReason, ...cachedInputOf(usage) };
}

const CUT_OFF = 'the reply stream ended before the provider said how the reply finished (no stop reason): it was cut off';

/**
 * Whether a stream ended without the provider ever saying why it stopped: the
 * connection closed cleanly mid-reply. The OpenAI-compatible adapter fails
 * such a stream itself; Anthropic's ends it as finished for an "other" reason,
 * and the text so far would pass as the run's answer, or a tool call cut in
 * its arguments would vanish. Failed as a malformed stream, it is asked again whole.
 */
function endedUnsaid(finishReason: string, rawFinishReason: string | undefined): boolean {
  return rawFinishReason === undefined && (finishReason === 'other' || finishReason === 'unknown');
}

/** The cached share of the prompt, when the provider reported one. */
function cachedInputOf(usage: LanguageModelUsage | undefined): { cachedInput?: CachedInput } {
  const readTokens = usage?.inputTokenDetails?.cacheReadTokens ?? usage?.cachedInputTokens ?? 0;
  const writeTokens = usage?.inputTokenDetails?.cacheWriteTokens ?? 0;
  return readTokens || writeTokens ? { cachedInput: { readTokens, writeTokens } } : {};
}

/** A tool call the SDK could not parse keeps its id and name, with the reason instead of arguments. */
function toToolCall(part: { toolCallId: string; toolName: string; input: unknown; invalid?: boolean; error?: unknown }): ToolCall {
  if (part.invalid) {
    const reason = part.error instanceof Error ? part.error.message : String(part.error ?? 'invalid tool call');
    return { id: part.toolCallId, name: part.toolName, args: undefined, argsError: reason.slice(0, 500) };
  }
  return { id: part.toolCallId, name: part.toolName, args: part.input };
}

function toUsage(usage: LanguageModelUsage | undefined): Usage | null {
  if (usage?.inputTokens === undefined && usage?.outputTokens === undefined) return null;
  const inputTokens = usage?.inputTokens ?? 0;
  const outputTokens = usage?.outputTokens ?? 0;
  return { inputTokens, outputTokens, totalTokens: usage?.totalTokens ?? inputTokens + outputTokens };
}
