import {
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { controlSignals, criticReportSignal, progressSignal, type CriticInput } from '../api/messages.js';
import type { Activities } from '../activities/index.js';
import { ExtendOnce } from '../critic/escalator.js';
import { CriticWatch, type Decision, type WatchState } from '../run/critic-watch.js';

interface CriticCarry {
  watch: WatchState;
  extended: string[];
}

const { criticDecide } = proxyActivities<Activities>({ startToCloseTimeout: '90s', retry: { maximumAttempts: 2 } });

/**
 * The watchdog of one run. It owns the mechanics (idle tracking, one
 * escalation per idle period, a sticky kill) and asks its policy what to do;
 * decisions reach the run only as the signals an operator would send, so each
 * is in both histories. It never fails the run: a policy that throws is a
 * zero decision, and a run that is gone ends the critic.
 */
export async function critic(input: CriticInput): Promise<void> {
  const carry = input.state as CriticCarry | undefined;
  const watch = new CriticWatch(input.softTimeoutMs, Date.now(), carry?.watch);
  const extendOnce = new ExtendOnce(input.softTimeoutMs, carry?.extended);
  const run = getExternalWorkflowHandle(input.runId);
  let ended = false;
  let runGone = false;
  setHandler(progressSignal, (report) => {
    if (report.ended) ended = true;
    watch.recordActivity(report);
  });

  async function send(work: () => Promise<void>): Promise<void> {
    try {
      await CancellationScope.nonCancellable(work);
    } catch (err) {
      log.warn(`critic cannot reach run ${input.runId}; stopping: ${(err as Error).message}`);
      runGone = true;
    }
  }

  async function decide(): Promise<Decision> {
    const progress = watch.progress(Date.now());
    if (input.policy === 'llm') {
      try {
        const answer = await criticDecide({ runId: input.runId, goal: input.goal, model: input.criticModel ?? input.model, progress, softTimeoutMs: input.softTimeoutMs });
        watch.addCost(answer.costUsd);
        if (answer.decision) return answer.decision;
        log.warn(`llm critic gave no usable decision (${answer.error}); falling back to extend-once`);
      } catch (err) {
        log.warn(`llm critic failed (${(err as Error).message}); falling back to extend-once`);
      }
    }
    return extendOnce.onSoftTimeout({ runId: input.runId, goal: input.goal }, progress);
  }

  await send(() => run.signal(criticReportSignal, watch.status(input.policy)));
  while (!ended && !runGone) {
    const next = watch.nextEscalationAt();
    const version = watch.version;
    const changed = await condition(() => ended || watch.version !== version, next === null ? undefined : Math.max(1, next - Date.now()));
    if (ended) break;
    if (changed) continue;
    let decision: Decision;
    try {
      decision = await decide();
    } catch (err) {
      log.error(`critic policy threw; treating it as no decision: ${(err as Error).message}`);
      decision = {};
    }
    for (const signal of watch.apply(decision, Date.now())) {
      await send(() => run.signal(controlSignals[signal.name] as typeof controlSignals.steer, signal.payload as never));
    }
    await send(() => run.signal(criticReportSignal, watch.status(input.policy)));
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof critic>({ ...input, state: { watch: watch.snapshot(), extended: extendOnce.snapshot() } satisfies CriticCarry });
    }
  }
}
