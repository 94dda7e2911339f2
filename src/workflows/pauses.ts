import { condition, log } from '@temporalio/workflow';
import type { RunRuntime } from './run-runtime.js';

/**
 * Holds the run while it is paused (emergency stop, budget, a question),
 * publishing why, until someone acts; past `maxPause` with nobody acting the
 * run ends `timeout`.
 */
export async function waitWhilePaused(rt: RunRuntime): Promise<void> {
  const { run } = rt;
  while (run.paused && !run.ended) {
    rt.holderMayHaveGone();
    rt.reportWaitToParent();
    rt.publish();
    rt.publishWarnings();
    log.warn(`run paused: ${run.state}`, { runId: rt.runId, state: run.state, reason: run.safety.status().reason });
    const resumed = await condition(() => !run.paused || run.ended, rt.spec.limits.maxPause);
    if (!resumed) run.abandonPause(Date.now());
  }
  rt.reportWaitToParent();
  rt.publish();
}

/**
 * Ends the run `timeout` at its deadline and cuts the work in flight. The
 * deadline is suspended while the run is paused, and the timer re-arms
 * whenever an extension moves it.
 */
export async function enforceDeadline(rt: RunRuntime): Promise<void> {
  const { run } = rt;
  while (!run.ended) {
    if (run.paused) {
      await condition(() => !run.paused || run.ended);
      continue;
    }
    const remaining = run.limits.remainingMs(Date.now());
    if (remaining <= 0) {
      run.expire(Date.now());
      rt.cancelInFlight();
      rt.publish();
      return;
    }
    const version = run.limits.version;
    await condition(() => run.ended || run.paused || run.limits.version !== version, remaining);
  }
}
