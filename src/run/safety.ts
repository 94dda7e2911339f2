import { type EmergencyState, type EmergencyStopStatus, noEmergencyStop } from '../api/types.js';

/** Plain JSON form of the safety state, carried across continue-as-new. */
export interface SafetySnapshot {
  consecutiveErrors: number;
  maxConsecutiveErrors: number;
  emergencyStop: EmergencyStopStatus;
}

/**
 * Consecutive-error tracking and the emergency stop (reference 000). Every
 * failed step counts; every successful tool execution resets the count; at the
 * threshold the stop trips and stays until someone clears it.
 */
export class Safety {
  private consecutiveErrors: number;
  private readonly maxConsecutiveErrors: number;
  private stop: EmergencyStopStatus;

  constructor(maxConsecutiveErrors: number, snapshot?: SafetySnapshot) {
    this.maxConsecutiveErrors = snapshot?.maxConsecutiveErrors ?? maxConsecutiveErrors;
    this.consecutiveErrors = snapshot?.consecutiveErrors ?? 0;
    this.stop = snapshot?.emergencyStop ?? noEmergencyStop();
  }

  get active(): boolean {
    return this.stop.active;
  }

  get errors(): number {
    return this.consecutiveErrors;
  }

  get max(): number {
    return this.maxConsecutiveErrors;
  }

  recordSuccess(): void {
    this.consecutiveErrors = 0;
  }

  /** Counts one failed step; returns the trip reason when this failure reached the threshold. */
  recordFailure(lastError: string, nowIso: string): string | null {
    this.consecutiveErrors += 1;
    if (this.stop.active || this.consecutiveErrors < this.maxConsecutiveErrors) return null;
    const reason = `Maximum consecutive errors reached (${this.consecutiveErrors}); last error: ${firstLine(lastError)}`;
    this.trip(reason, nowIso);
    return reason;
  }

  /** Trips the stop by hand or by threshold; a second trip keeps the first reason. */
  trip(reason: string, nowIso: string): boolean {
    if (this.stop.active) return false;
    this.stop = { active: true, reason, since: nowIso };
    return true;
  }

  /** Clears the stop and the count. Throws when there is nothing to clear, as the Update must say so. */
  clear(): void {
    if (!this.stop.active) throw new Error('Emergency stop is not active');
    this.stop = noEmergencyStop();
    this.consecutiveErrors = 0;
  }

  status(): EmergencyStopStatus {
    return { ...this.stop };
  }

  emergencyState(): EmergencyState {
    return {
      emergency_stop: this.stop.active,
      consecutive_errors: this.consecutiveErrors,
      max_consecutive_errors: this.maxConsecutiveErrors,
    };
  }

  snapshot(): SafetySnapshot {
    return { consecutiveErrors: this.consecutiveErrors, maxConsecutiveErrors: this.maxConsecutiveErrors, emergencyStop: this.status() };
  }
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
