import { jsonBytes, MAX_REPLY_ARGS_BYTES, MAX_REPLY_TEXT_CHARS, MAX_TOOL_CALLS_PER_REPLY } from '../api/payload-limits.js';
import type { ToolCall } from '../api/types.js';

/** A model reply as far as its size goes. */
export interface SizedReply {
  text: string;
  toolCalls: ToolCall[];
}

/**
 * Caps what a model reply may put in the activity's result (and so in the
 * run's history and transcript): arguments past the reply's byte budget are
 * dropped and the call is marked, so the workflow refuses it with an error the
 * model reads; calls past the count are dropped with a note; long text is cut.
 * A model that writes a 10 MB file in one call gets told to write it in parts
 * instead of failing the activity on Temporal's payload limit.
 */
export function boundReply<R extends SizedReply>(reply: R): R {
  let budget = MAX_REPLY_ARGS_BYTES;
  const kept = reply.toolCalls.slice(0, MAX_TOOL_CALLS_PER_REPLY);
  const toolCalls = kept.map((call): ToolCall => {
    const bytes = jsonBytes(call.args ?? null);
    if (bytes <= budget) {
      budget -= bytes;
      return call;
    }
    const { args: _dropped, argsError: _error, ...rest } = call;
    return { ...rest, args: undefined, argsBytes: bytes };
  });
  const notes: string[] = [];
  const dropped = reply.toolCalls.length - kept.length;
  if (dropped > 0) notes.push(`[${dropped} further tool calls were dropped: a reply may make at most ${MAX_TOOL_CALLS_PER_REPLY}]`);
  let text = reply.text;
  if (text.length > MAX_REPLY_TEXT_CHARS) {
    notes.push(`[reply text cut at ${MAX_REPLY_TEXT_CHARS} characters]`);
    text = text.slice(0, MAX_REPLY_TEXT_CHARS);
  }
  if (notes.length) text = [text, ...notes].filter(Boolean).join('\n');
  return { ...reply, text, toolCalls };
}
