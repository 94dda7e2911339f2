import type { ToolResult } from '../api/types.js';

/** One non-idempotent call this worker ran: its result to come (or come), and how to stop it. */
export interface CallInFlight {
  result: Promise<ToolResult>;
  stop(reason: unknown): void;
}

type Entry = CallInFlight & { settledAt?: number; claimed?: boolean };

/**
 * How long an attempt the server gave up on runs on for a retry to claim it.
 * A retry after an outage comes within seconds of the server's return; none
 * comes when the run itself is gone (terminated, or ended meanwhile), and the
 * command is then stopped.
 */
const CLAIM_WINDOW_MS = 30_000;

/**
 * The non-idempotent calls this worker runs or ran lately, by run and call.
 * When the Temporal server is away longer than a call's heartbeat timeout,
 * the server gives up on the attempt and, once back, sends the call again:
 * often to this same worker, which ran it on (or finished it) meanwhile.
 * The new attempt then takes that attempt's result rather than telling the
 * model the call was interrupted, and a run whose command finished loses
 * nothing. A worker that died remembers nothing, and the retry says so.
 */
export class CallsInFlight {
  private readonly calls = new Map<string, Entry>();

  constructor(
    private readonly keepMs = 30 * 60_000,
    private readonly limit = 1_000,
    private readonly claimWindowMs = CLAIM_WINDOW_MS,
  ) {}

  /** Runs the call under `key`; `run` gets the signal that stops it. */
  start(key: string, run: (signal: AbortSignal) => Promise<ToolResult>): CallInFlight {
    this.forgetOld();
    const controller = new AbortController();
    const entry: Entry = {
      result: run(controller.signal),
      stop: (reason) => controller.abort(reason),
    };
    entry.result.then(
      () => (entry.settledAt = Date.now()),
      () => this.calls.delete(key),
    );
    this.calls.set(key, entry);
    return entry;
  }

  /** The call under `key`, for a retry that takes it over. */
  find(key: string): CallInFlight | undefined {
    this.forgetOld();
    const entry = this.calls.get(key);
    if (entry) entry.claimed = true;
    return entry;
  }

  /** The server gave up on the attempt running `key`: it runs on for a retry to claim, and is stopped if none does in time. */
  abandoned(key: string, reason: unknown): void {
    const entry = this.calls.get(key);
    if (!entry) return;
    setTimeout(() => {
      if (!entry.claimed && entry.settledAt === undefined) entry.stop(reason);
    }, this.claimWindowMs).unref();
  }

  private forgetOld(): void {
    const now = Date.now();
    for (const [key, call] of this.calls) if (call.settledAt !== undefined && now - call.settledAt > this.keepMs) this.calls.delete(key);
    // The oldest first: Map keeps insertion order.
    for (const key of this.calls.keys()) {
      if (this.calls.size <= this.limit) break;
      this.calls.delete(key);
    }
  }
}
