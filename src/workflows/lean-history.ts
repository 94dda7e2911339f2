import { patched } from '@temporalio/workflow';

/**
 * Whether this run writes the leaner history: its workspace claimed by a local
 * activity, no upsert of the search attributes its start set
 * (src/run/visibility-policy.ts), and one patch marker where it had one for
 * each change. Each patch a run takes costs it a marker and a
 * visibility write of its own (the SDK upserts `TemporalChangeVersion`), so a
 * run recorded with this patch has every change patched before it, and takes
 * none of their patches. Runs recorded before it replay as they were.
 */
export function leanHistory(): boolean {
  return tracingInterceptorsAlways() || patched('lean-history');
}

let interceptorsAlways: boolean | undefined;

/**
 * Whether this run takes the OpenTelemetry workflow interceptors on every
 * worker (src/workflows/tracing-interceptors.ts). Runs recorded with this
 * patch write the leaner history too, so a new run takes one patch, not two.
 * Asked first as the run starts, and kept: a run recorded before it, still
 * in flight when its worker is upgraded, must not take it halfway.
 */
export function tracingInterceptorsAlways(): boolean {
  interceptorsAlways ??= patched('tracing-interceptors-always');
  return interceptorsAlways;
}

/** Whether the change made under patch `id` (before `lean-history`) applies to this run. */
export function patchedOrLean(id: string): boolean {
  return leanHistory() || patched(id);
}

/** Whether the change made under patch `id` (after `tracing-interceptors-always`) applies: to every run recorded with that patch, and by its own to runs recorded before. */
export function patchedSinceInterceptorsAlways(id: string): boolean {
  return tracingInterceptorsAlways() || patched(id);
}
