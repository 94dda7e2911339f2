import type { ToolCall, TranscriptMessage } from '../api/types.js';

/** What a call id may look like: what providers send (`call_…`, `toolu_…`), and nothing a terminal would act on or a prompt would show as more than an id. */
const PLAIN_ID = /^[A-Za-z0-9_.:-]{1,200}$/;

/**
 * The reply's tool calls with ids the run can key on: each plain and used
 * once in the run; any other id is replaced by a fresh one, which the model
 * then sees in the transcript. A model makes its ids up. One it reuses from
 * an earlier turn would let a decision sent twice for the earlier call approve
 * the later one, and one with a newline, an escape or prompt-like text would
 * dress up the approval prompt a person decides on.
 */
export function usableCallIds(calls: ToolCall[], transcript: readonly TranscriptMessage[], fresh: () => string): ToolCall[] {
  const used = new Set(transcript.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : [])));
  return calls.map((call) => {
    const id = PLAIN_ID.test(call.id) && !used.has(call.id) ? call.id : freshId(used, fresh);
    used.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

function freshId(used: ReadonlySet<string>, fresh: () => string): string {
  for (;;) {
    const id = `call_${fresh()}`;
    if (!used.has(id)) return id;
  }
}
