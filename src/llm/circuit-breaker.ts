/**
 * A circuit breaker per LLM provider (reference 004). Once a provider is
 * failing, calls fail fast instead of piling onto a dead endpoint, and the run
 * can route to its fallback models; after the open window probes go through,
 * and enough successes close it again. Retries of single calls live a layer
 * above (Temporal's retry policy); this only decides whether to try at all.
 */

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  /** Consecutive failures that open a closed breaker. */
  failureThreshold: number;
  /** Consecutive successes in half-open that close it. */
  successThreshold: number;
  /** The first open window. */
  initialBackoffMs: number;
  /** The cap on the window, which doubles on each failed probe. */
  maxBackoffMs: number;
}

/** Everything a breaker takes: its options, a clock (tests inject one) and a hook for metrics. */
export type BreakerInit = Partial<BreakerOptions> & {
  now?: () => number;
  onStateChange?: (from: BreakerState, to: BreakerState) => void;
};

/** Plain JSON view of a breaker, for logs and status. */
export interface BreakerSnapshot {
  state: BreakerState;
  failures: number;
  successes: number;
  backoffMs: number;
  openUntil: number | null;
}

/** Reference 004's defaults: 5 failures open it; 10 s doubling to 120 s; 2 successes close it. */
export const DEFAULT_BREAKER: BreakerOptions = { failureThreshold: 5, successThreshold: 2, initialBackoffMs: 10_000, maxBackoffMs: 120_000 };

/** A three-state (closed → open → half-open) breaker around one provider. */
export class CircuitBreaker {
  private readonly opts: BreakerOptions;
  private readonly now: () => number;
  private readonly changed?: (from: BreakerState, to: BreakerState) => void;
  private current: BreakerState = 'closed';
  private failures = 0;
  private successes = 0;
  private backoffMs: number;
  private openedUntil: number | null = null;
  private halfOpenSince: number | null = null;

  constructor(init: BreakerInit = {}) {
    const { now, onStateChange, ...opts } = init;
    this.opts = { ...DEFAULT_BREAKER, ...opts };
    this.now = now ?? Date.now;
    this.changed = onStateChange;
    this.backoffMs = this.opts.initialBackoffMs;
  }

  get state(): BreakerState {
    return this.current;
  }

  /** When the open window ends (epoch ms), or null when the breaker is not open. */
  openUntil(): number | null {
    return this.current === 'open' ? this.openedUntil : null;
  }

  /** How long until a call may go out; 0 when one may go now. */
  retryInMs(): number {
    return this.current === 'open' && this.openedUntil !== null ? Math.max(0, this.openedUntil - this.now()) : 0;
  }

  /** Whether a call may go out now; an elapsed open window lets probes through (half-open). */
  allow(): boolean {
    if (this.current !== 'open') return true;
    if (this.now() < (this.openedUntil ?? 0)) return false;
    this.successes = 0;
    this.halfOpenSince = this.now();
    this.move('half_open');
    return true;
  }

  onSuccess(): void {
    if (this.current === 'half_open') {
      this.successes += 1;
      if (this.successes >= this.opts.successThreshold) this.close();
    } else if (this.current === 'closed') {
      this.failures = 0;
    }
    // A success while open is a call that left before it opened: it proves nothing about now.
  }

  /** The last failure counted against it, to say why it is open. */
  lastFailure: string | null = null;

  onFailure(why?: string): void {
    if (why) this.lastFailure = why;
    if (this.current === 'half_open') {
      // A failed probe: the provider is still down, so wait twice as long, up to the cap. A failure long after the
      // breaker went half-open (longer than it was last open) is no failed probe of that outage: with sparse calls
      // the breaker can stay half-open for hours, and a lone rate limit then cost the doubled window (120 s).
      const quietMs = this.now() - (this.halfOpenSince ?? this.now());
      this.backoffMs = quietMs > this.backoffMs ? this.opts.initialBackoffMs : Math.min(this.backoffMs * 2, this.opts.maxBackoffMs);
      this.open();
    } else if (this.current === 'closed') {
      this.failures += 1;
      if (this.failures >= this.opts.failureThreshold) this.open();
    }
    // A failure while open is a straggler from before it opened; counting it would extend the window twice.
  }

  /**
   * Holds calls back for `ms`: the provider asked to be left alone that long (a 429's Retry-After). The window is
   * the provider's word, so the backoff it would double on a failed probe stays as it was.
   */
  holdFor(ms: number): void {
    const until = this.now() + ms;
    if (this.current === 'open' && (this.openedUntil ?? 0) >= until) return;
    this.openedUntil = until;
    this.failures = 0;
    this.successes = 0;
    this.move('open');
  }

  /** Forces it open from outside (a health check already knows the provider is down). */
  trip(): void {
    this.open();
  }

  /** Forces it closed (an operator restored the provider and will not wait for the probe window). */
  reset(): void {
    this.close();
  }

  snapshot(): BreakerSnapshot {
    return { state: this.current, failures: this.failures, successes: this.successes, backoffMs: this.backoffMs, openUntil: this.openUntil() };
  }

  private open(): void {
    this.openedUntil = this.now() + this.backoffMs;
    this.failures = 0;
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
    if (from !== to) this.changed?.(from, to);
  }
}

/** One breaker per provider, so one provider's outage does not stop the others. */
export class BreakerRegistry {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly opts: Omit<BreakerInit, 'onStateChange'> = {},
    private readonly onStateChange?: (provider: string, from: BreakerState, to: BreakerState) => void,
  ) {}

  /** The provider's breaker, created closed on first use. */
  get(provider: string): CircuitBreaker {
    let breaker = this.breakers.get(provider);
    if (!breaker) {
      breaker = new CircuitBreaker({ ...this.opts, onStateChange: (from, to) => this.onStateChange?.(provider, from, to) });
      this.breakers.set(provider, breaker);
    }
    return breaker;
  }

  /**
   * Every breaker used so far, in first-use order, as it stands now: one whose
   * open window has passed is half-open (its next call is a probe), though it
   * moves there only when a call asks.
   */
  all(): Array<{ provider: string; state: BreakerState; openUntil: number | null }> {
    return [...this.breakers].map(([provider, b]) =>
      b.state === 'open' && b.retryInMs() === 0 ? { provider, state: 'half_open', openUntil: null } : { provider, state: b.state, openUntil: b.openUntil() },
    );
  }
}
