import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  type ExternalWorkflowHandle,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { ControlMessage, ControlName } from '../api/control.js';
import { controlSignals, criticReportSignal, progressSignal } from '../api/messages.js';
import { criticCarrySchema, criticInputSchema, payloadProblem, progressReportSchema } from '../api/message-schemas.js';
import type { CriticInput } from '../api/types.js';
import { type CriticRunInfo, type Escalator, ExtendOnce } from '../critic/escalator.js';
import { LlmEscalator } from '../critic/llm-escalator.js';
import { CriticWatch, type Decision, type Progress, type WatchState } from '../run/critic-watch.js';
import { criticSummary } from '../run/summaries.js';

interface CriticCarry {
  watch: WatchState;
  extended: string[];
}

/** Without a run's own limit, the critic continues as new at this history length (or when Temporal suggests it). */
const DEFAULT_MAX_HISTORY_EVENTS = 10_000;

const { criticDecide } = proxyActivities<Activities>({ startToCloseTimeout: '90s', retry: { maximumAttempts: 2 } });
// With a heartbeat, a worker that dies during an escalation costs its retry seconds instead of the whole 90 s.
const { criticDecide: beatingCriticDecide } = proxyActivities<Activities>({
  startToCloseTimeout: '90s',
  heartbeatTimeout: '15s',
  retry: { maximumAttempts: 2 },
});

/**
 * The watchdog of one run. It owns the mechanics (idle tracking, one
 * escalation per idle period, a sticky kill) and asks its policy what to do;
 * decisions reach the run only as the signals an operator would send, so each
 * is in both histories. It never fails the run: a policy that throws is a
 * zero decision, and a run that is gone ends the critic.
 */
export async function critic(raw: CriticInput): Promise<void> {
  const { input, carry } = parseInput(raw);
  const watch = new CriticWatch(input.softTimeoutMs, Date.now(), carry?.watch);
  const extendOnce = new ExtendOnce(input.softTimeoutMs, carry?.extended);
  const escalator = input.policy === 'llm' ? llmEscalator(input, watch, extendOnce) : extendOnce;
  const run = getExternalWorkflowHandle(input.runId);
  let ended = false;
  let runGone = false;
  // A pause or a resumption changes when the next escalation is due, which the run's status shows.
  let reportDue = false;
  setHandler(progressSignal, (payload: unknown) => {
    // Anyone who reaches Temporal can signal a critic: a bad report is ignored, never a failed workflow task.
    const report = progressReportSchema.safeParse(payload);
    if (!report.success) return log.warn(`ignored progress signal: ${payloadProblem(report.error)}`, { runId: input.runId });
    if (report.data.ended) ended = true;
    if (report.data.paused !== undefined) reportDue = true;
    watch.recordActivity(report.data);
  });
  const carryOn = () => continueAsNew<typeof critic>({ ...input, state: { watch: watch.snapshot(), extended: extendOnce.snapshot() } satisfies CriticCarry });
  const send = async (work: () => Promise<void>) => {
    runGone ||= !(await reached(input.runId, work));
  };

  await send(() => run.signal(criticReportSignal, watch.status(input.policy)));
  while (!ended && !runGone) {
    // A busy run reports every step and tool: the history grows without a stall, so the check comes before waiting.
    if (historyIsLong(input) && patched('critic-continue-when-busy')) {
      await condition(allHandlersFinished);
      if (ended) break;
      await carryOn();
    }
    const next = watch.nextEscalationAt();
    const version = watch.version;
    const woke = await condition(() => ended || watch.version !== version, next === null ? undefined : Math.max(1, next - Date.now()));
    // With no escalation due (a pause, or one already made this idle period) the wait has no timeout, and the SDK
    // resolves it with undefined: only a change woke it. Critics recorded before the patch escalated on it.
    const changed = woke ?? (next === null && patched('critic-untimed-wait-is-a-change'));
    if (ended) break;
    if (changed) {
      if (reportDue) {
        reportDue = false;
        await send(() => run.signal(criticReportSignal, watch.status(input.policy)));
      }
      continue;
    }
    const decision = await decide(escalator, input, watch);
    for (const signal of watch.apply(decision, Date.now())) await send(() => signalControl(run, signal));
    await send(() => run.signal(criticReportSignal, watch.status(input.policy)));
    if (workflowInfo().continueAsNewSuggested) await carryOn();
  }
}

/** The critic's input and carried state, checked: a malformed start fails the critic (never the run), not its workflow task. */
function parseInput(raw: unknown): { input: CriticInput; carry: CriticCarry | undefined } {
  const input = criticInputSchema.safeParse(raw);
  if (!input.success)
    throw ApplicationFailure.create({ type: 'InvalidCriticInput', message: `invalid critic input: ${payloadProblem(input.error)}`, nonRetryable: true });
  if (input.data.state === undefined) return { input: input.data, carry: undefined };
  const carry = criticCarrySchema.safeParse(input.data.state);
  if (!carry.success)
    throw ApplicationFailure.create({ type: 'InvalidCriticInput', message: `invalid critic state: ${payloadProblem(carry.error)}`, nonRetryable: true });
  return { input: input.data, carry: carry.data };
}

function historyIsLong(input: CriticInput): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength >= (input.maxHistoryEvents ?? DEFAULT_MAX_HISTORY_EVENTS);
}

/** The `llm` policy over the `criticDecide` activity, its cost counted by the watch, falling back to extend-once. */
function llmEscalator(input: CriticInput, watch: CriticWatch, fallback: Escalator): Escalator {
  const model = input.criticModel ?? input.model;
  const ask = (_run: CriticRunInfo, progress: Progress) =>
    // patched(): critics recorded before the heartbeat replay their escalations unchanged.
    (patched('critic-decide-heartbeat') ? beatingCriticDecide : criticDecide).executeWithOptions(
      { summary: criticSummary(model, progress.idleMs, progress.step) },
      [{ runId: input.runId, goal: input.goal, model, progress, softTimeoutMs: input.softTimeoutMs }],
    );
  return new LlmEscalator(ask, fallback, {
    onCost: (costUsd) => watch.addCost(costUsd),
    onFallback: (why) => log.warn(`${why}; falling back to extend-once`),
  });
}

/** Asks the policy about the current stall; a policy that throws is treated as no decision. */
async function decide(escalator: Escalator, input: CriticInput, watch: CriticWatch): Promise<Decision> {
  try {
    return await escalator.onSoftTimeout({ runId: input.runId, goal: input.goal }, watch.progress(Date.now()));
  } catch (err) {
    log.error(`critic policy threw; treating it as no decision: ${(err as Error).message}`);
    return {};
  }
}

/** Sends a control message as the Signal an operator would send, signed by the critic for the run's audit trail. */
function signalControl<N extends ControlName>(run: ExternalWorkflowHandle, message: ControlMessage<N>): Promise<void> {
  return run.signal(controlSignals[message.name], { ...message.payload, audit: { by: 'critic', via: 'critic' } });
}

/** Runs a send to the run outside any cancellation; false when the run cannot be reached (it is gone). */
async function reached(runId: string, work: () => Promise<void>): Promise<boolean> {
  try {
    await CancellationScope.nonCancellable(work);
    return true;
  } catch (err) {
    log.warn(`critic cannot reach run ${runId}; stopping: ${(err as Error).message}`);
    return false;
  }
}
