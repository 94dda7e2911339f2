export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  failureThreshold: number;
  successThreshold: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
}

/** Reference 004's defaults: 5 failures open it; 10 s doubling to 120 s; 2 successes close it. */
export const DEFAULT_BREAKER: BreakerOptions = { failureThreshold: 5, successThreshold: 2, initialBackoffMs: 10_000, maxBackoffMs: 120_000 };

/**
 * A three-state circuit breaker around one provider. Once it is failing, calls
 * fail fast instead of piling onto a dead endpoint; after the open window a
 * probe may pass, and enough successes close it again.
 */
export class CircuitBreaker {
  private readonly opts: BreakerOptions;
  private readonly now: () => number;
  private current: BreakerState = 'closed';
  private failures = 0;
  private successes = 0;
  private backoffMs: number;
  private openedUntil: number | null = null;
  onStateChange?: (from: BreakerState, to: BreakerState) => void;

  constructor(opts: Partial<BreakerOptions> & { now?: () => number } = {}) {
    const { now, ...rest } = opts;
    this.opts = { ...DEFAULT_BREAKER, ...rest };
    this.now = now ?? Date.now;
    this.backoffMs = this.opts.initialBackoffMs;
  }

  get state(): BreakerState {
    return this.current;
  }

  openUntil(): number | null {
    return this.current === 'open' ? this.openedUntil : null;
  }

  retryInMs(): number {
    return this.current === 'open' && this.openedUntil !== null ? Math.max(0, this.openedUntil - this.now()) : 0;
  }

  /** Whether a call may go out now; an elapsed open window lets probes through (half-open). */
  allow(): boolean {
    if (this.current !== 'open') return true;
    if (this.now() < (this.openedUntil ?? 0)) return false;
    this.move('half_open');
    this.successes = 0;
    return true;
  }

  onSuccess(): void {
    if (this.current === 'half_open') {
      this.successes += 1;
      if (this.successes >= this.opts.successThreshold) this.close();
      return;
    }
    this.failures = 0;
  }

  onFailure(): void {
    if (this.current === 'half_open') {
      // A failed probe: back off twice as long, up to the cap.
      this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs);
      this.open();
      return;
    }
    if (this.current === 'open') return;
    this.failures += 1;
    if (this.failures >= this.opts.failureThreshold) this.open();
  }

  /** Forces it open from outside (a health check already knows the provider is down). */
  trip(): void {
    this.open();
  }

  /** Forces it closed (an operator restored the provider and will not wait for the probe window). */
  reset(): void {
    this.close();
  }

  snapshot(): { state: BreakerState; failures: number; backoffMs: number; openUntil: number | null } {
    return { state: this.current, failures: this.failures, backoffMs: this.backoffMs, openUntil: this.openUntil() };
  }

  private open(): void {
    this.openedUntil = this.now() + this.backoffMs;
    this.successes = 0;
    this.move('open');
  }

  private close(): void {
    this.failures = 0;
    this.successes = 0;
    this.backoffMs = this.opts.initialBackoffMs;
    this.openedUntil = null;
    this.move('closed');
  }

  private move(to: BreakerState): void {
    const from = this.current;
    this.current = to;
    if (from !== to) this.onStateChange?.(from, to);
  }
}

/** One breaker per provider, so one provider's outage does not stop the others. */
export class BreakerRegistry {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly opts: Partial<BreakerOptions> & { now?: () => number } = {},
    private readonly onStateChange?: (provider: string, from: BreakerState, to: BreakerState) => void,
  ) {}

  get(provider: string): CircuitBreaker {
    let breaker = this.breakers.get(provider);
    if (!breaker) {
      breaker = new CircuitBreaker(this.opts);
      breaker.onStateChange = (from, to) => this.onStateChange?.(provider, from, to);
      this.breakers.set(provider, breaker);
    }
    return breaker;
  }

  all(): Array<{ provider: string; state: BreakerState; openUntil: number | null }> {
    return [...this.breakers].map(([provider, b]) => ({ provider, state: b.state, openUntil: b.openUntil() }));
  }
}
