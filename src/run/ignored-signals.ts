/*
 * A Signal cannot answer its sender, so a control message the run refused
 * (a stale callId, an edit its tool's schema rejects, a clear of a run that is
 * not stopped) would look applied in history. The run says so in its
 * warnings, where `tether status`, the panel and `run --wait` show it. Only
 * the latest few are kept: a sender that repeats a bad message must not grow
 * the run's state without end. A stop of a stopped run, or a clear of one that
 * is not stopped, finds the run as asked (a parent passes both down to all its
 * children): no warning.
 */
import { ESTOP_ALREADY_ACTIVE, ESTOP_NOT_ACTIVE } from '../api/control.js';

const REFUSAL = /^ignored \w+ signal at /;
/** How many refusals a run's warnings hold at once; the oldest goes first. */
export const IGNORED_SIGNALS_KEPT = 5;
const REASON_CHARS = 300;

/** The warning for a refused `name` Signal. */
export function ignoredSignalWarning(name: string, reason: string, nowMs: number): string {
  const shortReason = reason.length > REASON_CHARS ? `${reason.slice(0, REASON_CHARS)}…` : reason;
  return `ignored ${name} signal at ${new Date(nowMs).toISOString()}: ${shortReason}`;
}

/** Whether a refusal for `reason` is worth a warning: not when the run was already as the message asked. */
export function worthAWarning(reason: string): boolean {
  return reason !== ESTOP_ALREADY_ACTIVE && reason !== ESTOP_NOT_ACTIVE;
}

/** `warnings` with `warning` (a refusal) added, keeping only the latest refusals. */
export function withIgnoredSignal(warnings: readonly string[], warning: string): string[] {
  const refusals = warnings.filter((w) => REFUSAL.test(w));
  const dropped = new Set(refusals.slice(0, Math.max(0, refusals.length - IGNORED_SIGNALS_KEPT + 1)));
  return [...warnings.filter((w) => !dropped.has(w)), warning];
}
