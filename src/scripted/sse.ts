/**
 * The OpenAI Chat Completions wire encoding of a scripted reply: the
 * `chat.completion` object and the `chat.completion.chunk` SSE stream, shaped
 * the way OpenAI sends them so real clients parse them unchanged.
 */
import type { RenderedReply } from './script.js';

/** What a completion carries besides the reply itself. */
export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
  /** Prefix of tool call ids; the i-th call gets `<prefix>_<i>`. */
  callIdPrefix: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** The non-streaming `chat.completion` body. */
export function completionJson(reply: RenderedReply, meta: CompletionMeta): string {
  const toolCalls = reply.toolCalls.map((call, i) => ({
    id: `${meta.callIdPrefix}_${i}`,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  return JSON.stringify({
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: reply.text, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        logprobs: null,
        finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
      },
    ],
    usage: meta.usage,
  });
}

/** The whole SSE stream of a reply, ending in `data: [DONE]`; the usage chunk only when the client asked for it. */
export function completionSse(reply: RenderedReply, meta: CompletionMeta, includeUsage: boolean): string {
  const head = `{"id":${JSON.stringify(meta.id)},"object":"chat.completion.chunk","created":${meta.created},"model":${JSON.stringify(meta.model)},`;
  const event = (choices: unknown[], extra = '') => `data: ${head}"choices":${JSON.stringify(choices)}${extra}}\n\n`;
  const delta = (d: object, finish: string | null = null) => event([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);

  let out = delta({ role: 'assistant', content: '' });
  for (const piece of split(reply.text, 3)) out += delta({ content: piece });
  reply.toolCalls.forEach((call, index) => {
    out += delta({ tool_calls: [{ index, id: `${meta.callIdPrefix}_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] });
    for (const piece of split(call.arguments, 2)) out += delta({ tool_calls: [{ index, function: { arguments: piece } }] });
  });
  out += delta({}, reply.toolCalls.length ? 'tool_calls' : 'stop');
  if (includeUsage) out += event([], `,"usage":${JSON.stringify(meta.usage)}`);
  return `${out}data: [DONE]\n\n`;
}

/** Cuts `text` into at most `parts` pieces, never between the halves of a surrogate pair. */
function split(text: string, parts: number): string[] {
  const pieces: string[] = [];
  const size = Math.ceil(text.length / parts);
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + size, text.length);
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end++;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
