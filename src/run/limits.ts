import type { RunSpec } from '../api/spec.js';

/** Plain JSON form of the run's limits, carried across continue-as-new. */
export interface LimitsSnapshot {
  deadlineMs: number;
  maxSteps: number;
  pausedAtMs: number | null;
}

/**
 * The run's deadline and step ceiling. The deadline is suspended while the run
 * is paused: resuming pushes it out by the time spent paused, so a run that
 * waited a day for a person does not time out the moment it resumes.
 */
export class Limits {
  private deadlineMs: number;
  private maxSteps: number;
  private pausedAtMs: number | null;
  /** Bumped on every change so a timer waiting on the old deadline can re-arm. */
  version = 0;

  constructor(init: LimitsSnapshot) {
    this.deadlineMs = init.deadlineMs;
    this.maxSteps = init.maxSteps;
    this.pausedAtMs = init.pausedAtMs;
  }

  get steps(): number {
    return this.maxSteps;
  }

  get paused(): boolean {
    return this.pausedAtMs !== null;
  }

  /** The deadline as it stands if the run resumed at `nowMs`. */
  deadline(nowMs: number): number {
    return this.pausedAtMs === null ? this.deadlineMs : this.deadlineMs + (nowMs - this.pausedAtMs);
  }

  remainingMs(nowMs: number): number {
    return this.pausedAtMs === null ? this.deadlineMs - nowMs : this.deadlineMs - this.pausedAtMs;
  }

  pause(nowMs: number): void {
    if (this.pausedAtMs !== null) return;
    this.pausedAtMs = nowMs;
    this.version++;
  }

  resume(nowMs: number): void {
    if (this.pausedAtMs === null) return;
    this.deadlineMs += nowMs - this.pausedAtMs;
    this.pausedAtMs = null;
    this.version++;
  }

  /** Pushes the deadline out and raises the step ceiling, saturating instead of wrapping. */
  extend(byMs = 0, steps = 0): void {
    this.deadlineMs = Math.min(Number.MAX_SAFE_INTEGER, this.deadlineMs + Math.max(0, byMs));
    this.maxSteps = Math.min(Number.MAX_SAFE_INTEGER, this.maxSteps + Math.max(0, steps));
    this.version++;
  }

  snapshot(): LimitsSnapshot {
    return { deadlineMs: this.deadlineMs, maxSteps: this.maxSteps, pausedAtMs: this.pausedAtMs };
  }
}

/** With no maxRuntime and no critic, a run has the contract's default maxRuntime. */
const DEFAULT_RUNTIME_MS = 30 * 60_000;

/**
 * Whether a run's first deadline is the critic's backstop: with no maxRuntime,
 * the critic bounds the run, at softTimeout × backstopMultiplier.
 */
const criticBackstop = (spec: RunSpec) => spec.limits.maxRuntime === undefined && spec.critic.policy !== 'off';

/** How long a run has at its start: its maxRuntime, else the critic's backstop, else the default. */
export function initialRuntimeMs(spec: RunSpec): number {
  if (spec.limits.maxRuntime !== undefined) return spec.limits.maxRuntime;
  if (!criticBackstop(spec)) return DEFAULT_RUNTIME_MS;
  return spec.critic.softTimeout * spec.critic.backstopMultiplier;
}

/** Why a run ended at `deadline` (ISO): which rule set it, and how to have more. */
export function deadlineCause(spec: RunSpec, deadline: string): string {
  if (!criticBackstop(spec)) return `maxRuntime reached (deadline ${deadline})`;
  return (
    `deadline reached (${deadline}): with no limits.maxRuntime, a run with a critic has softTimeout × backstopMultiplier ` +
    `(${spec.critic.softTimeout / 1000} s × ${spec.critic.backstopMultiplier}) and what extend adds; give a longer run --max-runtime`
  );
}
