import { ActivityFailure, ApplicationFailure, isCancellation, log, patched, sleep } from '@temporalio/workflow';
import type { CircuitOpenDetails, LlmReply } from '../activities/llm.js';
import { FAILURE_TYPES, FATAL_FAILURE_TYPES } from '../llm/retry-policy.js';
import { planCompaction } from '../run/compaction.js';
import { ModelSweep, type SweepVerdict } from '../run/model-sweep.js';
import type { RunRuntime } from './run-runtime.js';

type Attempt =
  | { reply: LlmReply }
  | { circuitOpenMs: number; why: string; breakers?: CircuitOpenDetails['breakers'] }
  | { overflow: string }
  | { failed: string }
  | { fatal: string }
  | { interrupted: true }
  | { workerGone: true };

/**
 * Asks the model for the next step. Falls back along `fallbackModels` when a
 * provider's circuit is open or its retries ran out; when every circuit is
 * open it waits out the shortest window instead of burning attempts. A
 * context overflow compacts the transcript and asks again.
 */
export async function askModel(rt: RunRuntime): Promise<LlmReply | undefined> {
  const { run, spec } = rt;
  if (run.compactionDue) await compact(rt, 'the context neared its limit');
  // Compaction may have failed or not been enough: a worker may need the transcript whole, and it must fit a payload.
  if (run.boundTranscript()) log.warn("transcript shortened to fit Temporal's payload limit", { runId: rt.runId, step: run.step });
  let compactedForOverflow = false;
  for (;;) {
    const sweep = new ModelSweep();
    const models = [spec.model, ...spec.fallbackModels];
    for (const [i, model] of models.entries()) {
      const outcome = await attempt(rt, model, i < models.length - 1);
      if ('reply' in outcome) return outcome.reply;
      if ('interrupted' in outcome) return undefined;
      if ('workerGone' in outcome) {
        run.addUserMessage(await rt.rebind(), 'notice');
        return askModel(rt);
      }
      if ('fatal' in outcome) {
        run.end({ status: 'failed', cause: `LLM call failed: ${outcome.fatal}` }, Date.now());
        return undefined;
      }
      if ('overflow' in outcome) {
        const notCompacted = compactedForOverflow ? 'compaction already ran for this call' : await compact(rt, 'the provider reported a context overflow');
        if (!notCompacted) {
          compactedForOverflow = true;
          return askModel(rt);
        }
        // Asking again sends the same context: it fails the same way at once, five times over, into an emergency stop no one can
        // cure. A fallback model may have a larger window: it is asked; when none is left, the run ends saying why.
        if (!patched('overflow-ends-run')) {
          sweep.overflowCountedAsFailure();
          break;
        }
        sweep.overflowed(model, outcome.overflow, notCompacted);
      } else if ('circuitOpenMs' in outcome) {
        if (outcome.breakers) run.noteBreakers(outcome.breakers);
        sweep.circuitOpen(outcome.circuitOpenMs, outcome.why);
      } else sweep.failed(model, outcome.failed);
    }
    const verdict = sweep.verdict();
    if (verdict.kind === 'end') {
      run.end({ status: 'failed', cause: verdict.cause }, Date.now());
      return undefined;
    }
    if (verdict.kind === 'count_failure') {
      rt.noteTrip(run.recordFailure(verdict.error, Date.now()));
      return undefined;
    }
    if (!(await waitOutCircuits(rt, verdict))) return undefined;
  }
}

/** Waits out the shortest open circuit; whether to ask again (not when the run ended or paused meanwhile). */
async function waitOutCircuits(rt: RunRuntime, wait: Extract<SweepVerdict, { kind: 'wait' }>): Promise<boolean> {
  const { run } = rt;
  // Waiting out an open circuit sends no request, so it is no failed step: the run waits, and finishes when a
  // provider recovers. Each probe that fails still counts, so a lasting outage still trips the emergency stop.
  // patched(): runs recorded before counted each wait as an error (an outage of a few minutes stopped every
  // run on the provider, those that had sent it nothing included).
  if (!patched('circuit-wait-is-no-error') && patched('circuit-wait-counts')) {
    rt.noteTrip(run.recordFailure(wait.asFailure, Date.now()));
    if (run.ended || run.paused) return false;
  }
  log.warn(`every provider's circuit is open; waiting ${wait.ms} ms`, { runId: rt.runId });
  run.waitForProviders(Date.now() + wait.ms, wait.why);
  const waited = await rt.interruptible(() => sleep(wait.ms));
  return !(waited === undefined && (run.ended || run.paused));
}

async function attempt(rt: RunRuntime, model: string, fallbackNext: boolean, resend = false): Promise<Attempt> {
  try {
    const reply = await rt.callModel(model, resend, fallbackNext);
    return reply ? { reply } : { interrupted: true };
  } catch (err) {
    if (rt.workerGone(err)) return { workerGone: true };
    // A run cancelled through Temporal mid-call: the run ends cancelled, and the call is no failure of the provider's.
    if (isCancellation(err) && patched('cancelled-call-not-a-failure')) throw err;
    if (!(err instanceof ActivityFailure)) throw err;
    const cause = err.cause instanceof ApplicationFailure ? err.cause : undefined;
    // The worker lost (or never had) the run's transcript: send it whole, once.
    if (cause?.type === 'TranscriptCacheMiss' && !resend) return attempt(rt, model, fallbackNext, true);
    const message = cause?.message ?? err.message;
    if (cause?.type === 'CircuitOpen') {
      const details = cause.details?.[0] as Partial<CircuitOpenDetails> | undefined;
      return { circuitOpenMs: Number(details?.retryInMs ?? 10_000), why: message, breakers: details?.breakers };
    }
    if (cause?.type === 'LlmContextOverflow') return { overflow: message };
    // A spent quota ends the run only when no other model is left; the provider is not held back, since a fallback may be its own.
    if (cause?.type === FAILURE_TYPES.quota && fallbackNext) return { failed: message };
    if (cause?.type && FATAL_FAILURE_TYPES.includes(cause.type)) return { fatal: message };
    return { failed: message };
  }
}

/**
 * Summarises the older turns; on failure the run keeps its full context and tries again a few steps later.
 * Null once compacted, else why not (nothing left to summarise, or the summary call failed), for the cause.
 */
async function compact(rt: RunRuntime, why: string): Promise<string | null> {
  const { run } = rt;
  const plan = planCompaction(run.transcript);
  if (!plan) return 'nothing older is left to summarise';
  try {
    const summary = await rt.summarize(plan);
    if (!summary) return 'the summary call was interrupted';
    run.recordCompaction(plan, summary, Date.now());
    log.info(`compacted ${plan.middle.length} messages because ${why}`, { runId: rt.runId, step: run.step });
    return null;
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    run.recordCompactionFailed();
    const failure = err.cause?.message ?? err.message;
    log.warn(`compaction failed (${failure}); keeping the full context`, { runId: rt.runId });
    return `compaction failed: ${failure}`;
  }
}
