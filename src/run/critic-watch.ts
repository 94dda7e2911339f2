import type { ControlMessage } from '../api/control.js';
import type { CriticStatus } from '../api/types.js';

/** The escalator's verdict for a stalled run. The zero value does nothing and lets the backstop act. */
export interface Decision {
  nudge?: string;
  extendBy?: number;
  raiseStepsBy?: number;
  kill?: boolean;
  killReason?: string;
}

/** What an escalator is told about a stalled run. */
export interface Progress {
  step: number;
  lastActivityAt: string;
  idleMs: number;
  lastTool: string | null;
}

/** The control messages a critic may send: the ones an operator would. */
export type CriticSignal = ControlMessage<'steer' | 'extend' | 'kill'>;

export interface WatchState {
  lastActivityMs: number;
  step: number;
  lastTool: string | null;
  /** The lastActivityMs value already escalated for: once per idle period. */
  escalatedFor: number | null;
  killed: boolean;
  decisions: Array<{ at: string; decision: string }>;
  costUsd: number;
  /** The run waits for a person (emergency stop, budget, a question, a tool approval): it is not stalled. */
  paused: boolean;
}

/** The run's `extend` validator bounds: a decision beyond them is clamped, never wrapped or rejected. */
const MAX_EXTEND_MS = 30 * 86_400_000;
const MAX_RAISE_STEPS = 1_000_000;

/**
 * The critic's deterministic mechanics (reference 002): track activity, fire
 * once per idle period past the soft timeout, turn decisions into the signals
 * an operator would send, and keep a kill sticky. Policy lives elsewhere.
 */
export class CriticWatch {
  private state: WatchState;
  /** Bumped on every change so a timer waiting on the old escalation time can re-arm. */
  version = 0;

  constructor(
    private readonly softTimeoutMs: number,
    nowMs: number,
    state?: WatchState,
  ) {
    this.state = state ?? { lastActivityMs: nowMs, step: 0, lastTool: null, escalatedFor: null, killed: false, decisions: [], costUsd: 0, paused: false };
  }

  /** A report from the run. One that it went on after a pause carries the time it went on: the idle clock starts again there. */
  recordActivity(report: { step: number; lastActivityAt: string; lastTool: string | null; paused?: boolean }): void {
    const at = Date.parse(report.lastActivityAt);
    if (Number.isFinite(at) && at > this.state.lastActivityMs) this.state.lastActivityMs = at;
    this.state.step = report.step;
    this.state.lastTool = report.lastTool;
    if (report.paused !== undefined) this.state.paused = report.paused;
    this.version++;
  }

  /** When the current idle period is due an escalation: never for a paused run, nor twice for one period. */
  nextEscalationAt(): number | null {
    if (this.state.killed || this.state.paused || this.state.escalatedFor === this.state.lastActivityMs) return null;
    return this.state.lastActivityMs + this.softTimeoutMs;
  }

  progress(nowMs: number): Progress {
    return {
      step: this.state.step,
      lastActivityAt: new Date(this.state.lastActivityMs).toISOString(),
      idleMs: Math.max(0, nowMs - this.state.lastActivityMs),
      lastTool: this.state.lastTool,
    };
  }

  addCost(costUsd: number): void {
    this.state.costUsd += Math.max(0, costUsd);
  }

  /** Applies a decision for the current idle period and returns the signals to send to the run. */
  apply(decision: Decision, nowMs: number): CriticSignal[] {
    this.state.escalatedFor = this.state.lastActivityMs;
    this.version++;
    if (this.state.killed) return [];
    const signals: CriticSignal[] = [];
    if (decision.kill) {
      // A kill ignores any nudge or extension paired with it, and nothing after it can undo it.
      this.state.killed = true;
      signals.push({ name: 'kill', payload: { reason: decision.killReason?.trim() || 'killed by the critic: the run stopped making progress' } });
    } else {
      if (decision.nudge?.trim()) signals.push({ name: 'steer', payload: { message: decision.nudge.trim() } });
      const by = decision.extendBy && decision.extendBy > 0 ? Math.min(Math.max(1_000, Math.round(decision.extendBy)), MAX_EXTEND_MS) : undefined;
      const steps = decision.raiseStepsBy && decision.raiseStepsBy > 0 ? Math.min(Math.round(decision.raiseStepsBy), MAX_RAISE_STEPS) : undefined;
      if (by !== undefined || steps !== undefined)
        signals.push({ name: 'extend', payload: { ...(by !== undefined ? { by } : {}), ...(steps !== undefined ? { steps } : {}) } });
    }
    const described = signals.length ? signals.map((s) => s.name).join('+') : 'none';
    this.state.decisions = [...this.state.decisions, { at: new Date(nowMs).toISOString(), decision: described }].slice(-20);
    return signals;
  }

  status(policy: string): CriticStatus & { costUsd: number } {
    const next = this.nextEscalationAt();
    return {
      policy,
      softTimeoutMs: this.softTimeoutMs,
      nextEscalationAt: next === null ? null : new Date(next).toISOString(),
      decisions: [...this.state.decisions],
      costUsd: this.state.costUsd,
    };
  }

  snapshot(): WatchState {
    return { ...this.state, decisions: [...this.state.decisions] };
  }
}
