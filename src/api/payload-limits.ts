/**
 * How big the things Tether puts in Temporal payloads may get. Temporal
 * refuses a payload over 2 MB (its blob size limit) and a request over 4 MB
 * (gRPC): an activity result over it fails the activity, a workflow command
 * over it fails the workflow task again and again. So every input a user or a
 * model controls is capped where it enters, and what a run carries (its
 * transcript) is kept well under the limit whatever it holds. Pure, so specs,
 * activities and workflows share the numbers.
 */

const KiB = 1024;

/** Temporal's limit on one payload (the blob size error limit of a default server). */
export const TEMPORAL_PAYLOAD_LIMIT_BYTES = 2 * KiB * KiB;

/** A whole RunSpec, serialised: it travels in every start, continue-as-new and sub-agent. */
export const MAX_SPEC_BYTES = 512 * KiB;

/** The arguments of all tool calls in one model reply together; a call past it is refused, not run. */
export const MAX_REPLY_ARGS_BYTES = 256 * KiB;

/** Tool calls one model reply may make; the rest are dropped with a note the model reads. */
export const MAX_TOOL_CALLS_PER_REPLY = 64;

/** The text of one model reply; longer text is cut with a note. */
export const MAX_REPLY_TEXT_CHARS = 64_000;

/**
 * The most a transcript may weigh in a payload (continue-as-new, a full resend
 * to a worker, the summariser's input): with a spec at its cap it leaves room
 * under Temporal's limit.
 */
export const MAX_TRANSCRIPT_BYTES = 1024 * KiB;

/** The longest `maxContextChars`: a context that large, compacted or not, still fits a payload. */
export const MAX_CONTEXT_CHARS = 500_000;

/**
 * How large a run's history may grow through control messages. Temporal ends
 * a run whose history passes 50 MB (its default error limit); a paused run
 * cannot continue as new to start a fresh one, so steers sent to it pile up.
 */
export const MAX_HISTORY_BYTES_FOR_MESSAGES = 40 * KiB * KiB;

/** Why a message of `messageBytes` must not join a history of `historyBytes`, or null when it may. */
export function historyRoomProblem(historyBytes: number, messageBytes: number): string | null {
  if (historyBytes + messageBytes <= MAX_HISTORY_BYTES_FOR_MESSAGES) return null;
  return (
    `the run's history holds ${describeBytes(historyBytes)}, and this message (${describeBytes(messageBytes)}) would take it past ` +
    `${describeBytes(MAX_HISTORY_BYTES_FOR_MESSAGES)}, near Temporal's 50 MB limit, where Temporal ends the run. Send less, or fork the run (\`tether fork\`) to go on with a fresh history`
  );
}

/** The size of `value` as Temporal's JSON converter writes it: UTF-8 bytes of its JSON. */
export function jsonBytes(value: unknown): number {
  return utf8Bytes(JSON.stringify(value) ?? '');
}

/** UTF-8 length of a string without TextEncoder (not every sandbox has it); a lone surrogate counts as the 3 bytes of U+FFFD. */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** "1.5 MiB", "300 KiB": sizes in messages people and models read. */
export function describeBytes(bytes: number): string {
  if (bytes >= KiB * KiB) return `${(bytes / (KiB * KiB)).toFixed(1)} MiB`;
  return `${Math.ceil(bytes / KiB)} KiB`;
}
