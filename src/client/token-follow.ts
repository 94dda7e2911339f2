/**
 * Follows a run's live tokens: finds the model call in flight through the
 * run's pending activities (its heartbeat carries the stream's address, see
 * src/activities/llm.ts), reads the stream from whichever worker holds the
 * call, and when that worker is lost says so and picks up the retried call.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { READERS_PER_CALL, type TokenEvent, type TokenFrame, type TokenStreamAd } from '../api/token-stream.js';
import type { TetherClient } from './runs.js';
import { sseFrames } from './sse-frames.js';
import { underSignal } from './under-signal.js';

/** A model call in flight that streams its tokens. */
export interface StreamingCall {
  ad: TokenStreamAd;
  attempt: number;
  worker: string;
}

/** The call whose stream has not been read yet, if any: every stream is read once, so a retried call is found by its new address. */
export function nextCall(calls: StreamingCall[], read: ReadonlySet<string>): StreamingCall | null {
  return calls.find((call) => !read.has(call.ad.url)) ?? null;
}

/** How reading one stream ended. */
export type StreamOutcome = 'ended' | 'lost' | 'gone' | 'full';

/** The notice a follower gets when the worker holding a call is lost mid-stream. */
export function interruption(call: StreamingCall): TokenEvent {
  const { step } = call.ad;
  const message = `token stream interrupted: worker ${call.worker} lost; the call is being retried (attempt ${call.attempt + 1})`;
  return { type: 'token_interrupted', step, attempt: call.attempt, worker: call.worker, message };
}

/** The notice a follower gets when the worker already streams the call to as many readers as it serves. */
export function turnedAway(call: StreamingCall): TokenEvent {
  const { step } = call.ad;
  const message = `no live tokens for step ${step}: the worker streams a call to ${READERS_PER_CALL} readers at most, and has that many (the reply still comes whole)`;
  return { type: 'token_notice', step, attempt: call.attempt, message };
}

/** What one frame of a call's stream tells the follower. */
export function tokenEvent(call: StreamingCall, frame: TokenFrame): TokenEvent {
  const at = { step: call.ad.step, attempt: call.attempt };
  if (frame.event === 'token') return { type: 'token', ...at, text: frame.text };
  if (frame.event === 'dropped') return { type: 'token_notice', ...at, message: `${frame.chars} characters of the reply dropped: this reader fell behind` };
  return { type: 'token_end', ...at, ok: frame.ok };
}

/** The run's model calls in flight that announced a token stream, or null once the run's execution chain is closed. */
async function streamingCalls(tc: TetherClient, runId: string): Promise<StreamingCall[] | null> {
  const { raw, status } = await tc.client.workflow.getHandle(runId).describe();
  if (status.name !== 'RUNNING') return null;
  const calls: StreamingCall[] = [];
  for (const pending of raw.pendingActivities ?? []) {
    if (pending.activityType?.name !== 'callModel' || !pending.heartbeatDetails?.payloads?.length) continue;
    const [details] = await decodeArrayFromPayloads(tc.client.options.loadedDataConverter, pending.heartbeatDetails.payloads).catch(() => []);
    const ad = (details as { stream?: TokenStreamAd } | undefined)?.stream;
    if (ad?.url) calls.push({ ad, attempt: pending.attempt ?? 1, worker: pending.lastWorkerIdentity || 'unknown' });
  }
  return calls;
}

/** Reads one call's stream to its end, handing each frame on; `lost` when the worker went away first. */
async function readStream(call: StreamingCall, onFrame: (frame: TokenFrame) => void, signal?: AbortSignal): Promise<StreamOutcome> {
  let response: Response;
  try {
    response = await fetch(call.ad.url, { signal });
  } catch {
    return signal?.aborted ? 'ended' : 'lost';
  }
  if (response.status === 429) return 'full';
  // Not found: the call ended (or its worker restarted) between describing the run and connecting.
  if (!response.ok || !response.body) return 'gone';
  try {
    for await (const { event, data } of sseFrames(response.body)) {
      const frame = { event, ...JSON.parse(data) } as TokenFrame;
      onFrame(frame);
      if (frame.event === 'end') return 'ended';
    }
    return 'lost';
  } catch {
    return signal?.aborted ? 'ended' : 'lost';
  }
}

/**
 * Hands on the run's live tokens until its execution chain closes or `signal`
 * aborts. Only what workers stream now is seen: a follower that joins mid-call
 * gets the call's text so far first.
 */
export async function followTokens(
  tc: TetherClient,
  runId: string,
  onEvent: (event: TokenEvent) => void,
  opts: { signal?: AbortSignal; intervalMs?: number } = {},
): Promise<void> {
  const read = new Set<string>();
  const interval = opts.intervalMs ?? 250;
  while (!opts.signal?.aborted) {
    const calls = await underSignal(tc, opts.signal, () => streamingCalls(tc, runId)).catch(() => [] as StreamingCall[]);
    if (calls === null) return;
    const call = nextCall(calls, read);
    if (!call) {
      await sleep(interval, undefined, { signal: opts.signal }).catch(() => undefined);
      continue;
    }
    read.add(call.ad.url);
    const outcome = await readStream(call, (frame) => onEvent(tokenEvent(call, frame)), opts.signal);
    if (outcome === 'lost' && !opts.signal?.aborted) onEvent(interruption(call));
    if (outcome === 'full') onEvent(turnedAway(call));
  }
}
