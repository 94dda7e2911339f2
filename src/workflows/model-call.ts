import { ActivityFailure, ApplicationFailure, log, sleep } from '@temporalio/workflow';
import type { LlmReply } from '../activities/llm.js';
import { defaultSystemPrompt } from '../run/prompt.js';
import { planCompaction, summaryMessage, transcriptChars } from '../run/compaction.js';
import type { RunContext } from './context.js';

/** LLM failures that no retry, fallback or loop can fix: the run fails loudly instead of burning calls. */
const FATAL_LLM_FAILURES = new Set(['LlmBadRequest', 'LlmAuthError']);

type Attempt = { reply: LlmReply } | { circuitOpenMs: number } | { overflow: true } | { failed: string } | { fatal: string } | { interrupted: true } | { workerGone: true };

/**
 * Asks the model for the next step. Falls back along `fallbackModels` when a
 * provider's circuit is open or its retries ran out; when every circuit is
 * open it waits out the shortest window instead of burning attempts. A
 * context overflow compacts the transcript and asks again.
 */
export async function askModel(ctx: RunContext): Promise<LlmReply | undefined> {
  const { run, spec } = ctx;
  await compactIfLarge(ctx);
  let compactedForOverflow = false;
  for (;;) {
    let shortestOpen = Number.POSITIVE_INFINITY;
    let lastFailure: string | null = null;
    for (const model of [spec.model, ...spec.fallbackModels]) {
      const outcome = await attempt(ctx, model);
      if ('reply' in outcome) return outcome.reply;
      if ('interrupted' in outcome) return undefined;
      if ('workerGone' in outcome) {
        run.addUserMessage(await ctx.rebind(), 'notice');
        return askModel(ctx);
      }
      if ('fatal' in outcome) {
        run.end({ status: 'failed', cause: `LLM call failed: ${outcome.fatal}` }, Date.now());
        return undefined;
      }
      if ('overflow' in outcome) {
        if (compactedForOverflow || !(await compact(ctx, 'the provider reported a context overflow'))) {
          lastFailure = 'context overflow, and compaction did not help';
          break;
        }
        compactedForOverflow = true;
        return askModel(ctx);
      }
      if ('circuitOpenMs' in outcome) shortestOpen = Math.min(shortestOpen, outcome.circuitOpenMs);
      else lastFailure = `${model}: ${outcome.failed}`;
    }
    if (lastFailure) {
      ctx.noteTrip(run.recordFailure(`LLM call failed after retries: ${lastFailure}`, Date.now()));
      return undefined;
    }
    log.warn(`every provider's circuit is open; waiting ${shortestOpen} ms`, { runId: ctx.runId });
    const waited = await ctx.interruptible(() => sleep(Math.max(1_000, shortestOpen)));
    if (waited === undefined && run.ended) return undefined;
  }
}

async function attempt(ctx: RunContext, model: string, resend = false): Promise<Attempt> {
  const { run, spec } = ctx;
  const length = run.transcript.length;
  const from = !resend && ctx.sent.epoch === run.transcriptEpoch && ctx.sent.length <= length ? ctx.sent.length : 0;
  try {
    const reply = await ctx.interruptible(() =>
      ctx.acts.callModel({
        runId: ctx.runId,
        step: run.step,
        model,
        system: spec.system ?? defaultSystemPrompt(spec),
        context: { epoch: run.transcriptEpoch, from, messages: run.transcript.slice(from), length },
        tools: spec.tools,
        timeoutMs: spec.limits.llmTimeout,
      }),
    );
    if (!reply) return { interrupted: true };
    ctx.sent = { epoch: run.transcriptEpoch, length };
    return { reply };
  } catch (err) {
    if (ctx.workerGone(err)) return { workerGone: true };
    if (!(err instanceof ActivityFailure)) throw err;
    const cause = err.cause instanceof ApplicationFailure ? err.cause : undefined;
    // The worker lost (or never had) the run's transcript: send it whole, once.
    if (cause?.type === 'TranscriptCacheMiss' && !resend) return attempt(ctx, model, true);
    const message = cause?.message ?? err.message;
    if (cause?.type === 'CircuitOpen') return { circuitOpenMs: Number((cause.details?.[0] as { retryInMs?: number })?.retryInMs ?? 10_000) };
    if (cause?.type === 'LlmContextOverflow') return { overflow: true };
    if (cause?.type && FATAL_LLM_FAILURES.has(cause.type)) return { fatal: message };
    return { failed: message };
  }
}

/** Compacts before the context nears its limit, unless a recent attempt failed. */
async function compactIfLarge(ctx: RunContext): Promise<void> {
  const { run, spec } = ctx;
  if (transcriptChars(run.transcript) <= spec.limits.maxContextChars) return;
  if (run.compactionRetryAtStep !== null && run.step < run.compactionRetryAtStep) return;
  await compact(ctx, 'the context neared its limit');
}

/** Summarises the older turns; on failure the run keeps its full context and tries again a few steps later. */
async function compact(ctx: RunContext, why: string): Promise<boolean> {
  const { run, spec } = ctx;
  const plan = planCompaction(run.transcript);
  if (!plan) return false;
  try {
    const summary = await ctx.interruptible(() =>
      ctx.acts.summarizeTranscript({ runId: ctx.runId, step: run.step, model: spec.model, goal: spec.goal, transcript: plan.middle, timeoutMs: spec.limits.llmTimeout }),
    );
    if (!summary) return false;
    run.replaceTranscript([...plan.head, summaryMessage(summary.text, plan.middle.length), ...plan.tail]);
    run.addCost(summary.costUsd, Date.now());
    run.compactionRetryAtStep = null;
    log.info(`compacted ${plan.middle.length} messages because ${why}`, { runId: ctx.runId, step: run.step });
    return true;
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    run.compactionRetryAtStep = run.step + 3;
    log.warn(`compaction failed (${err.cause?.message ?? err.message}); keeping the full context`, { runId: ctx.runId });
    return false;
  }
}
