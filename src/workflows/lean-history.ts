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
  return patched('lean-history');
}

/** Whether the change made under patch `id` (before `lean-history`) applies to this run. */
export function patchedOrLean(id: string): boolean {
  return leanHistory() || patched(id);
}
