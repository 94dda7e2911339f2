import type { InjectedSinks } from '@temporalio/worker';
import type { TetherSinks } from '../api/sinks.js';

/** Injects the metrics sink into workers; skipped on replay so a replayed run never counts twice. */
export function metricsSinks(metrics: TetherSinks['metrics']): InjectedSinks<TetherSinks> {
  const sink = {} as InjectedSinks<TetherSinks>['metrics'];
  for (const name of Object.keys(metrics) as Array<keyof TetherSinks['metrics']>) {
    sink[name] = { fn: (_info, ...args: unknown[]) => (metrics[name] as (...a: unknown[]) => void)(...args), callDuringReplay: false };
  }
  return { metrics: sink };
}
