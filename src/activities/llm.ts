import { trace } from '@opentelemetry/api';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { generateText, streamText, type LanguageModelUsage } from 'ai';
import type { ToolName } from '../api/spec.js';
import type { BreakerStatus, ToolCall, TranscriptMessage, Usage } from '../api/types.js';
import { classifyLlmError, FAILURE_TYPES, retryDelayMs, RETRY_BUDGETS, type ClassifiedError } from '../llm/classify.js';
import { toModelMessages, toolSet } from '../llm/messages.js';
import { createModel, ProviderConfigError, splitModel } from '../llm/providers.js';
import { TranscriptCacheMiss, type TranscriptDelta } from '../llm/transcript-cache.js';
import type { ActivityDeps } from './deps.js';

/** One LLM call as the workflow asks for it. The transcript is already capped by the workflow. */
export interface LlmCallInput {
  runId: string;
  /** Index of this call in the run; the scripted server replays by it. */
  step: number;
  model: string;
  system?: string;
  /** The transcript as a delta against what this worker already holds for the run. */
  context: TranscriptDelta;
  tools: ToolName[];
  timeoutMs: number;
}

export interface LlmReply {
  model: string;
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  costUsd: number;
  finishReason: string;
  warnings: string[];
  /** The worker's circuit breakers as this call left them, for `status`. */
  breakers?: BreakerStatus[];
}

/** What the previous attempt left in its heartbeat: a malformed stream makes the next attempt ask without streaming. */
interface LlmHeartbeat {
  chunks: number;
  nonStreaming?: boolean;
}

class LlmTimeoutError extends Error {
  override name = 'LlmTimeoutError';
}

/** The LLM activity: one model call, streamed, heartbeating, with errors classified for Temporal's retries. */
export function createLlmActivities(deps: ActivityDeps) {
  return {
    async callModel(input: LlmCallInput): Promise<LlmReply> {
      const ctx = Context.current();
      const { attempt } = ctx.info;
      const previous = ctx.info.heartbeatDetails as LlmHeartbeat | undefined;
      const progress: LlmHeartbeat = { chunks: 0, nonStreaming: previous?.nonStreaming };
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(new LlmTimeoutError(`no complete reply from ${input.model} within ${input.timeoutMs} ms`)), input.timeoutMs);
      // A steady heartbeat is what lets a kill reach a call that is still waiting for its first token.
      const ticker = setInterval(() => ctx.heartbeat(progress), 1_000);
      const abortSignal = AbortSignal.any([ctx.cancellationSignal, timeout.signal]);
      const provider = breakerKey(input.model);
      const breaker = deps.breakers?.get(provider);
      const started = Date.now();
      try {
        let transcript: TranscriptMessage[];
        try {
          transcript = deps.transcripts.resolve(input.runId, input.context);
        } catch (err) {
          if (!(err instanceof TranscriptCacheMiss)) throw err;
          throw ApplicationFailure.create({ type: 'TranscriptCacheMiss', message: err.message, nonRetryable: true });
        }
        if (breaker && !breaker.allow()) {
          throw ApplicationFailure.create({
            type: 'CircuitOpen',
            message: `circuit breaker for ${provider} is open; retry in ${breaker.retryInMs()} ms`,
            nonRetryable: true,
            details: [{ provider, retryInMs: breaker.retryInMs() }],
          });
        }
        const reply = await ask(deps, input, transcript, progress, abortSignal, () => ctx.heartbeat(progress));
        breaker?.onSuccess();
        reply.breakers = deps.breakers?.all().map((b) => ({ provider: b.provider, state: b.state, openUntil: b.openUntil ? new Date(b.openUntil).toISOString() : null }));
        deps.metrics?.llmCall(input.model, 'ok', reply.usage, reply.costUsd, (Date.now() - started) / 1000);
        trace.getActiveSpan()?.setAttributes({
          'tether.run_id': input.runId,
          'gen_ai.request.model': input.model,
          'gen_ai.usage.input_tokens': reply.usage.inputTokens,
          'gen_ai.usage.output_tokens': reply.usage.outputTokens,
        });
        return reply;
      } catch (error) {
        if (error instanceof ApplicationFailure) throw error;
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? error;
        const classified: ClassifiedError = timeout.signal.aborted
          ? { kind: 'timeout', message: (timeout.signal.reason as Error).message }
          : error instanceof ProviderConfigError
            ? { kind: 'auth', message: error.message }
            : classifyLlmError(error);
        if (classified.kind !== 'bad_request' && classified.kind !== 'context_overflow' && classified.kind !== 'auth') breaker?.onFailure();
        deps.metrics?.llmCall(input.model, classified.kind, undefined, 0, (Date.now() - started) / 1000);
        if (classified.kind === 'malformed') {
          progress.nonStreaming = true;
          ctx.heartbeat(progress);
        }
        throw toFailure(classified, attempt, deps.random ?? Math.random);
      } finally {
        clearTimeout(timer);
        clearInterval(ticker);
      }
    },
  };
}

async function ask(deps: ActivityDeps, input: LlmCallInput, transcript: TranscriptMessage[], progress: LlmHeartbeat, abortSignal: AbortSignal, beat: () => void): Promise<LlmReply> {
  const model = await createModel(input.model, { env: deps.env, scriptedUrl: deps.scriptedUrl });
  const request = {
    model,
    ...(input.system ? { system: input.system } : {}),
    messages: toModelMessages(transcript),
    tools: toolSet(input.tools),
    maxRetries: 0,
    abortSignal,
    headers: input.model.startsWith('scripted:') ? { 'x-tether-run': input.runId, 'x-tether-step': String(input.step) } : undefined,
  };
  let text = '';
  const toolCalls: ToolCall[] = [];
  let usage: LanguageModelUsage | undefined;
  let finishReason = 'unknown';
  if (progress.nonStreaming) {
    const result = await generateText(request);
    text = result.text;
    for (const call of result.toolCalls) toolCalls.push(toToolCall(call));
    usage = result.totalUsage;
    finishReason = result.finishReason;
  } else {
    const result = streamText({ ...request, onError: () => {} });
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') {
        text += part.text;
        progress.chunks++;
        beat();
      } else if (part.type === 'tool-call') {
        toolCalls.push(toToolCall(part));
        progress.chunks++;
        beat();
      } else if (part.type === 'finish') {
        usage = part.totalUsage;
        finishReason = part.finishReason;
      } else if (part.type === 'error') {
        throw part.error;
      } else if (part.type === 'abort') {
        throw abortSignal.reason ?? new Error('LLM call aborted');
      }
    }
  }
  if (abortSignal.aborted) throw abortSignal.reason;
  const tokens = toUsage(usage);
  const priced = deps.prices.cost(input.model, tokens);
  return {
    model: input.model,
    text,
    toolCalls,
    usage: tokens,
    costUsd: priced.costUsd,
    finishReason,
    warnings: priced.warning ? [priced.warning] : [],
  };
}

/** One breaker per provider; each scripted script stands for a provider of its own, so tests can fail one over to another. */
function breakerKey(model: string): string {
  const { provider } = splitModel(model);
  return provider === 'scripted' ? model : provider;
}

function toToolCall(part: { toolCallId: string; toolName: string; input: unknown; invalid?: boolean; error?: unknown }): ToolCall {
  if (part.invalid) {
    const reason = part.error instanceof Error ? part.error.message : String(part.error ?? 'invalid tool call');
    return { id: part.toolCallId, name: part.toolName, args: undefined, argsError: reason.slice(0, 500) };
  }
  return { id: part.toolCallId, name: part.toolName, args: part.input };
}

function toUsage(usage: LanguageModelUsage | undefined): Usage {
  const inputTokens = usage?.inputTokens ?? 0;
  const outputTokens = usage?.outputTokens ?? 0;
  return { inputTokens, outputTokens, totalTokens: usage?.totalTokens ?? inputTokens + outputTokens };
}

/** Turns a classified error into the failure Temporal retries (or not) per its class's budget. */
function toFailure(error: ClassifiedError, attempt: number, random: () => number): ApplicationFailure {
  const budget = RETRY_BUDGETS[error.kind];
  const final = attempt >= budget.attempts;
  return ApplicationFailure.create({
    type: FAILURE_TYPES[error.kind],
    message: `${error.kind}${error.status ? ` (HTTP ${error.status})` : ''}: ${error.message}`,
    nonRetryable: final,
    details: [{ kind: error.kind, status: error.status ?? null, attempt }],
    ...(final ? {} : { nextRetryDelay: retryDelayMs(error.kind, attempt, error.retryAfterMs, random) }),
  });
}
