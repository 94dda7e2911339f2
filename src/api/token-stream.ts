/**
 * Live tokens: what a model call's stream carries and how a follower finds
 * it. Tokens never enter workflow history; the worker holding the call serves
 * them, and its address travels in the call's heartbeat (docs/architecture.md,
 * "Live tokens").
 */

/** Readers of one call a worker serves at once; one beyond them is answered 429. A panel reads each run once, for all its pages. */
export const READERS_PER_CALL = 8;

/** What the LLM activity's heartbeat carries so a follower can find the call's token stream. */
export interface TokenStreamAd {
  /** `http://<host>:<port>/tokens/<capability>`: the capability is the only key to it. */
  url: string;
  /** The run's step this call answers, counted from 1 as `step_started` counts it. */
  step: number;
}

/** One event of a run's live tokens, as `tether run --output stream-json` prints it and the panel relays it. */
export type TokenEvent =
  /** Text as the model wrote it; the events of one call concatenate to its text (unless a `token_notice` says some was dropped). */
  | { type: 'token'; step: number; attempt: number; text: string }
  /** Something the follower should know: text dropped for a slow reader, a call that failed. */
  | { type: 'token_notice'; step: number; attempt: number; message: string }
  /** The worker holding the call was lost mid-stream: the retried call streams again from its start. */
  | { type: 'token_interrupted'; step: number; attempt: number; worker: string; message: string }
  /** The call's stream ended: its reply is complete (`ok`) or the attempt failed. */
  | { type: 'token_end'; step: number; attempt: number; ok: boolean };

/** A frame of the worker's token stream (SSE `event:` names). */
export type TokenFrame = { event: 'token'; text: string } | { event: 'dropped'; chars: number } | { event: 'end'; ok: boolean };
