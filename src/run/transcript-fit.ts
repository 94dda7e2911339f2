import { jsonBytes } from '../api/payload-limits.js';
import type { ToolCall, TranscriptMessage } from '../api/types.js';

/** The longest a message stays at each round of shortening, oldest messages first. */
const SHORTEN_TO = [8_000, 2_000, 400] as const;

/** Messages at the end that are shortened only in the last resort: what the model did just now. */
const KEEP_RECENT = 4;

/** A text cut to `max` characters, keeping its start and its end, saying how much went. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n… [${text.length - 2 * half} characters cut to fit the run's payload limit] …\n${text.slice(-half)}`;
}

function shortenCall(call: ToolCall, max: number): ToolCall {
  const args = JSON.stringify(call.args ?? null);
  if (args.length <= max) return call;
  // Arguments are replayed to the provider as the model's own earlier call: any JSON object will do.
  return { ...call, args: { cut: cut(args, max) } };
}

function shorten(message: TranscriptMessage, max: number): TranscriptMessage {
  if (message.role === 'assistant' && message.toolCalls) {
    return { ...message, content: cut(message.content, max), toolCalls: message.toolCalls.map((c) => shortenCall(c, max)) };
  }
  return { ...message, content: cut(message.content, max) };
}

/**
 * A transcript that fits `maxBytes` of JSON, for a payload that must carry it
 * whole (continue-as-new, a full resend, the summariser's input). Long
 * messages are shortened first (oldest first, then the recent ones); if that
 * is not enough, the oldest turns after the goal go, with a notice in their
 * place. The goal message always stays. Deterministic, so a workflow may call it.
 */
export function fitTranscript(messages: readonly TranscriptMessage[], maxBytes: number): { messages: TranscriptMessage[]; changed: boolean } {
  const out = [...messages];
  let total = jsonBytes(out);
  if (total <= maxBytes) return { messages: out, changed: false };
  const recentFrom = Math.max(1, out.length - KEEP_RECENT);
  for (const max of SHORTEN_TO) {
    for (const [from, to] of [
      [1, recentFrom],
      [recentFrom, out.length],
    ] as const) {
      for (let i = from; i < to && total > maxBytes; i++) {
        const before = jsonBytes(out[i]);
        out[i] = shorten(out[i]!, max);
        total += jsonBytes(out[i]) - before;
      }
    }
    if (total <= maxBytes) return { messages: out, changed: true };
  }
  return { messages: dropOldest(out, maxBytes), changed: true };
}

/** Drops turns after the goal until the rest fits, never leaving a tool result without its call. */
function dropOldest(messages: TranscriptMessage[], maxBytes: number): TranscriptMessage[] {
  const [goal, ...rest] = messages;
  const notice = (n: number): TranscriptMessage => ({
    role: 'user',
    source: 'notice',
    content: `[${n} earlier messages were dropped to fit the run's payload limit]`,
  });
  // Array brackets, commas, the goal and a notice with room for its count, then the rest message by message.
  let total = 2 + jsonBytes(goal) + 1 + jsonBytes(notice(Number.MAX_SAFE_INTEGER)) + rest.reduce((sum, m) => sum + jsonBytes(m) + 1, 0);
  let dropped = 0;
  while (rest.length > 1 && (total > maxBytes || rest[0]!.role === 'tool')) {
    total -= jsonBytes(rest.shift()) + 1;
    dropped++;
  }
  return [goal!, notice(dropped), ...rest];
}
