import { trace } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { modelContextQuery } from '../api/messages.js';
import type { ToolName } from '../api/spec.js';
import type { TokenStreamAd } from '../api/token-stream.js';
import type { BreakerStatus, ToolCall, TranscriptMessage, Usage } from '../api/types.js';
import { classifyLlmError, type ClassifiedError } from '../llm/classify.js';
import type { CircuitBreaker } from '../llm/circuit-breaker.js';
import { complete } from '../llm/complete.js';
import { createModel, ProviderConfigError, splitModel } from '../llm/providers.js';
import { usableCallIds } from '../llm/call-ids.js';
import { boundReply } from '../llm/reply-limits.js';
import { countsAgainstProvider, FAILURE_TYPES, isFinalAttempt, retryDelayMs } from '../llm/retry-policy.js';
import { TranscriptCacheMiss, type TranscriptDelta } from '../llm/transcript-cache.js';
import type { ActivityDeps, TokenStream } from './deps.js';
import { queryRun } from './run-query.js';
import { WholeReplyModels } from '../llm/whole-reply-models.js';

/** One LLM call as the workflow asks for it. The transcript is already capped by the workflow. */
export interface LlmCallInput {
  runId: string;
  /** Index of this call in the run; the scripted server replays by it. */
  step: number;
  model: string;
  system?: string;
  /** The system prompt is the one this worker keeps for the run (sent with the whole transcript only). */
  systemCached?: boolean;
  /** The transcript as a delta against what this worker already holds for the run. */
  context: TranscriptDelta;
  tools: ToolName[];
  timeoutMs: number;
  /** A fallback model follows this one: a provider that asks for a long wait is left for it rather than waited on. */
  fallbackNext?: boolean;
}

/** A model reply as the workflow records it: the completion, its price, and the breakers' state. */
export interface LlmReply {
  model: string;
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  costUsd: number;
  finishReason: string;
  warnings: string[];
  /** When the reply came, by the worker's clock: a time the run's history records, for the critic's reports. */
  completedAtMs?: number;
  /** The worker's circuit breakers as this call left them, for `status`. */
  breakers?: BreakerStatus[];
  /** The own queue of the worker that answered (null where workspaces are shared): the run can tell whether its workspace's worker did. */
  answeredBy?: string | null;
}

/**
 * What the call's heartbeat carries: progress; whether a malformed stream made
 * the next attempt ask without streaming; where followers read its tokens.
 */
interface LlmHeartbeat {
  chunks: number;
  nonStreaming?: boolean;
  stream?: TokenStreamAd;
}

class LlmTimeoutError extends Error {
  override name = 'LlmTimeoutError';
}

/** Heartbeats while chunks stream are at least this far apart, and the first comes this long after the call starts. */
const CHUNK_BEAT_MS = 500;
/** A call still running after this long announces its token stream; followers poll every 250 ms (src/client/token-follow.ts). */
const ANNOUNCE_AFTER_MS = 250;

/** The LLM activity: one model call, streamed, heartbeating, with errors classified for Temporal's retries. */
export function createLlmActivities(deps: ActivityDeps) {
  const wholeReplies = new WholeReplyModels();
  return {
    async callModel(input: LlmCallInput): Promise<LlmReply> {
      const ctx = Context.current();
      const previous = ctx.info.heartbeatDetails as LlmHeartbeat | undefined;
      const progress: LlmHeartbeat = { chunks: 0, nonStreaming: previous?.nonStreaming || wholeReplies.prefersWhole(input.model, Date.now()) };
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(new LlmTimeoutError(`no complete reply from ${input.model} within ${input.timeoutMs} ms`)), input.timeoutMs);
      const started = Date.now();
      const heartbeats = callHeartbeats(ctx, progress, started);
      const provider = breakerKey(input.model);
      const breaker = deps.breakers?.get(provider);
      // Steps are counted from 1 where people see them (stream-json's step_started, the timeline).
      const tokens = await openTokenStream(deps, input.step + 1, progress);
      if (tokens) heartbeats.announceStream();
      let ok = false;
      try {
        const { messages: transcript, system } = await resolveTranscript(deps, input);
        if (breaker && !breaker.allow()) {
          const retryInMs = breaker.retryInMs();
          const last = breaker.lastFailure ? `: ${breaker.lastFailure.slice(0, 300)}` : '';
          throw circuitOpen({ provider, retryInMs, breakers: breakerStates(deps) }, `${provider} open for ${Math.ceil(retryInMs / 1000)} s more${last}`);
        }
        const signal = AbortSignal.any([ctx.cancellationSignal, timeout.signal]);
        const reply = await ask(deps, { ...input, system }, transcript, progress, signal, heartbeats.chunk, tokens);
        ok = true;
        breaker?.onSuccess();
        // Asked whole after this call's stream came garbled, and answered: the next calls ask whole at once.
        if (previous?.nonStreaming) wholeReplies.remember(input.model, Date.now());
        reply.breakers = breakerStates(deps);
        reportSuccess(deps, input, reply, started);
        reply.completedAtMs = Date.now();
        reply.answeredBy = deps.workspaceQueue ?? null;
        return reply;
      } catch (error) {
        if (error instanceof ApplicationFailure) throw error;
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? error;
        throw failureOf(classify(error, timeout.signal), { deps, input, ctx, progress, provider, breaker, started });
      } finally {
        clearTimeout(timer);
        heartbeats.stop();
        tokens?.close(ok);
      }
    },
  };
}

/**
 * The heartbeats of one model call, from `started` until `stop()`: every second, after streamed chunks, and once to
 * announce the call's token stream.
 */
function callHeartbeats(ctx: Context, progress: LlmHeartbeat, started: number) {
  // A steady heartbeat is what lets a kill reach a call that is still waiting for its first token.
  const ticker = setInterval(() => ctx.heartbeat(progress), 1_000);
  // Streamed chunks beat at most twice a second, the first half a second into the call: the
  // worker flushes every 100 ms so tools die fast on a kill, and a model call need not cost the
  // server more for it (each heartbeat is a write of the run's state).
  let lastChunkBeat = started;
  let announce: NodeJS.Timeout | undefined;
  return {
    chunk: () => {
      if (Date.now() - lastChunkBeat < CHUNK_BEAT_MS) return;
      lastChunkBeat = Date.now();
      ctx.heartbeat(progress);
    },
    // Followers find the stream through a heartbeat, and a late one is sent the text so far: a call
    // that ends sooner than a follower polls is never announced, and costs the server no heartbeat.
    announceStream: () => {
      announce = setTimeout(() => ctx.heartbeat(progress), ANNOUNCE_AFTER_MS);
    },
    stop: () => {
      clearTimeout(announce);
      clearInterval(ticker);
    },
  };
}

/** A model call that failed, neither cancelled nor by a failure it raised itself: what `failureOf` needs of it. */
interface FailedCall {
  deps: ActivityDeps;
  input: LlmCallInput;
  ctx: Context;
  progress: LlmHeartbeat;
  provider: string;
  breaker: CircuitBreaker | undefined;
  started: number;
}

/**
 * The failure a call ends with, once its breaker and metrics have counted it: Temporal's retry per the error's class,
 * or the fallback model at once when the provider asks for a long wait and a fallback follows. A malformed stream
 * is recorded in the heartbeat, so the next attempt asks for the reply whole.
 */
function failureOf(classified: ClassifiedError, { deps, input, ctx, progress, provider, breaker, started }: FailedCall): ApplicationFailure {
  if (countsAgainstProvider(classified.kind)) breaker?.onFailure(classified.message);
  deps.metrics?.llmCall(input.model, classified.kind, undefined, 0, (Date.now() - started) / 1000);
  const wait = classified.kind === 'rate_limit' ? (classified.retryAfterMs ?? 0) : 0;
  if (input.fallbackNext && wait >= FALLBACK_RATHER_THAN_WAIT_MS) {
    // Waiting out a long Retry-After five times over would idle the run with a healthy fallback at hand: the
    // provider is held back for as long as it asked, and this call and the next go to the fallback.
    breaker?.holdFor(wait);
    return circuitOpen(
      { provider, retryInMs: Math.round(wait), breakers: breakerStates(deps) },
      `${classified.message}; the provider asks for ${Math.round(wait / 1000)} s, so the fallback is asked`,
    );
  }
  if (classified.kind === 'malformed') {
    progress.nonStreaming = true;
    ctx.heartbeat(progress);
  }
  return toFailure(classified, ctx.info.attempt, deps.random ?? Math.random);
}

/** The call's live token stream, announced in `progress`; a worker that cannot open one still makes the call. */
async function openTokenStream(deps: ActivityDeps, step: number, progress: LlmHeartbeat): Promise<TokenStream | null> {
  if (!deps.tokenStreams) return null;
  try {
    const stream = await deps.tokenStreams();
    progress.stream = { url: stream.url, step };
    return stream;
  } catch (err) {
    deps.logger.warn({ err: (err as Error).message }, 'no live token stream for this model call');
    return null;
  }
}

/** How long a model call waits for its run to answer with the transcript before asking for it through the history. */
const CONTEXT_QUERY_MS = 10_000;

/**
 * The run's whole transcript: from this worker's cache and the delta; on a
 * miss, from the run itself by query, which adds nothing to its history; and
 * only when the run cannot answer (no server to ask, a run moved on to a
 * later transcript) does the workflow resend it whole, once.
 */
async function resolveTranscript(deps: ActivityDeps, input: LlmCallInput): Promise<{ messages: TranscriptMessage[]; system?: string }> {
  try {
    return deps.transcripts.resolve(input.runId, input.context, { system: input.system, cached: input.systemCached });
  } catch (err) {
    if (!(err instanceof TranscriptCacheMiss)) throw err;
    const fetched = await transcriptFromRun(deps, input).catch((queryErr: Error) => {
      deps.logger.info({ runId: input.runId, err: queryErr.message }, 'transcript cache miss; the run resends it');
      return null;
    });
    if (fetched) return fetched;
    throw ApplicationFailure.create({ type: 'TranscriptCacheMiss', message: err.message, nonRetryable: true });
  }
}

/** The transcript this call was sent a delta of, read from the run; null when the run's is no longer that one. */
async function transcriptFromRun(deps: ActivityDeps, input: LlmCallInput): Promise<{ messages: TranscriptMessage[]; system?: string } | null> {
  const { epoch, length } = input.context;
  const run = await queryRun(deps, input.runId, modelContextQuery, CONTEXT_QUERY_MS);
  if (run.epoch !== epoch || run.messages.length < length) return null;
  const whole = { epoch, from: 0, messages: run.messages.slice(0, length), length };
  return deps.transcripts.resolve(input.runId, whole, { system: run.system });
}

/** The provider's breaker is open: fail at once so the workflow moves to a fallback model (or waits). */
/** A Retry-After at least this long sends the call to a fallback model, when there is one, instead of waiting. */
const FALLBACK_RATHER_THAN_WAIT_MS = 5_000;

/** What a `CircuitOpen` failure carries: which provider, when to ask again, and the worker's breakers. */
export interface CircuitOpenDetails {
  provider: string;
  retryInMs: number;
  breakers?: BreakerStatus[];
}

/** The worker's circuit breakers as they stand, for `status`. */
function breakerStates(deps: ActivityDeps): BreakerStatus[] | undefined {
  return deps.breakers?.all().map((b) => ({ provider: b.provider, state: b.state, openUntil: b.openUntil ? new Date(b.openUntil).toISOString() : null }));
}

/** A call refused by its provider's open circuit; its details carry the breakers, so `status` shows the outage while no reply comes. */
function circuitOpen(details: CircuitOpenDetails, why: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'CircuitOpen', message: why, nonRetryable: true, details: [details] });
}

function classify(error: unknown, timeout: AbortSignal): ClassifiedError {
  if (timeout.aborted) return { kind: 'timeout', message: (timeout.reason as Error).message };
  if (error instanceof ProviderConfigError) return { kind: 'auth', message: error.message };
  return classifyLlmError(error);
}

function reportSuccess(deps: ActivityDeps, input: LlmCallInput, reply: LlmReply, started: number): void {
  deps.metrics?.llmCall(input.model, 'ok', reply.usage, reply.costUsd, (Date.now() - started) / 1000);
  trace.getActiveSpan()?.setAttributes({
    'tether.run_id': input.runId,
    'gen_ai.request.model': input.model,
    'gen_ai.usage.input_tokens': reply.usage.inputTokens,
    'gen_ai.usage.output_tokens': reply.usage.outputTokens,
  });
}

/** One model call, priced; streamed unless an earlier attempt got a malformed stream. */
async function ask(
  deps: ActivityDeps,
  input: LlmCallInput,
  transcript: TranscriptMessage[],
  progress: LlmHeartbeat,
  abortSignal: AbortSignal,
  beat: () => void,
  tokens: TokenStream | null,
): Promise<LlmReply> {
  const model = await createModel(input.model, { env: deps.env, scriptedUrl: deps.scriptedUrl });
  const headers = input.model.startsWith('scripted:') ? { 'x-tether-run': input.runId, 'x-tether-step': String(input.step) } : undefined;
  const onChunk = (text?: string) => {
    progress.chunks++;
    if (text) tokens?.push(text);
    beat();
  };
  const completion = await complete(
    { model, system: input.system, transcript, tools: input.tools, abortSignal, headers },
    { stream: !progress.nonStreaming, onChunk },
  );
  // A reply asked for whole still reaches followers, in one piece.
  if (progress.nonStreaming) tokens?.push(completion.text);
  const priced = deps.prices.cost(input.model, completion.usage, completion.cachedInput);
  const warnings = [
    ...(priced.warning ? [priced.warning] : []),
    ...(completion.usageEstimated ? [`${input.model} reported no token usage: its tokens and cost are estimated from the text`] : []),
  ];
  const { usageEstimated: _, cachedInput: __, ...reply } = completion;
  const toolCalls = usableCallIds(reply.toolCalls, transcript, () => randomUUID().replaceAll('-', '').slice(0, 24));
  // The reply becomes this activity's result: it must fit a Temporal payload whatever the model wrote.
  return { model: input.model, ...boundReply({ ...reply, toolCalls }), costUsd: priced.costUsd, warnings };
}

/** One breaker per provider; each scripted script stands for a provider of its own, so tests can fail one over to another. */
function breakerKey(model: string): string {
  const { provider } = splitModel(model);
  return provider === 'scripted' ? model : provider;
}

/** Turns a classified error into the failure Temporal retries (or not) per its class's budget. */
function toFailure(error: ClassifiedError, attempt: number, random: () => number): ApplicationFailure {
  const final = isFinalAttempt(error.kind, attempt);
  return ApplicationFailure.create({
    type: FAILURE_TYPES[error.kind],
    message: `${error.kind}${error.status ? ` (HTTP ${error.status})` : ''}: ${error.message}`,
    nonRetryable: final,
    details: [{ kind: error.kind, status: error.status ?? null, attempt }],
    ...(final ? {} : { nextRetryDelay: retryDelayMs(error.kind, attempt, error.retryAfterMs, random) }),
  });
}
