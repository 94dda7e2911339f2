import { EXIT } from './exit-codes.js';
import { duration, note } from './output.js';

/** When a part stops: work first (stop taking work, drain), then what people look at, then the Temporal server. */
export type StopRank = 'work' | 'surface' | 'server';
const RANKS: StopRank[] = ['work', 'surface', 'server'];

interface Part {
  name: string;
  rank: StopRank;
  stop: () => Promise<void>;
  /** The immediate version, for a forced exit: kills child processes that would outlive us. */
  kill?: () => void;
}

const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** What stops a command: a signal, or one of its parts ending by itself (a server that crashed). */
export type StopCause = NodeJS.Signals | 'a part ended by itself';

/** Thrown into a start-up that a signal or a failed part interrupted, so it starts nothing more. */
export class Interrupted extends Error {
  constructor(readonly by: StopCause) {
    super(`interrupted: ${by}`);
    this.name = 'Interrupted';
  }
}

/**
 * Everything one foreground command started, and the one place its signals
 * are handled. The first SIGINT, SIGTERM or SIGHUP stops each part once, in
 * rank order (a part that fails to stop is reported, and the rest still
 * stop); a second one kills the child processes and exits at once.
 */
export class Lifecycle {
  private readonly parts: Part[] = [];
  private stopping: Promise<void> | null = null;
  private signal: StopCause | null = null;
  /** Whether a part ended by itself: the others stop without waiting on it (a worker does not drain against a dead server). */
  aPartEnded = false;
  /** Whether a signal cut the wait for a start-up step that had not settled: what it still holds (a connection that retries) may keep the process alive. */
  leftWorkBehind = false;
  private resolveInterrupted: (cause: StopCause) => void = () => {};
  /** Resolves with the first signal, or when a part ends by itself. */
  readonly interrupted = new Promise<StopCause>((resolve) => {
    this.resolveInterrupted = (cause) => {
      this.aborter.abort(new Interrupted(cause));
      resolve(cause);
    };
  });
  private readonly aborter = new AbortController();
  /** Aborted (with Interrupted) as `interrupted` resolves: for start-up steps that take an AbortSignal. */
  readonly abortSignal = this.aborter.signal;

  constructor(private readonly exit: (code: number) => void = (code) => process.exit(code)) {}

  /** Handles the signals from now on (the SDK's own handlers must be off: see `shutdownSignals`). */
  own(): this {
    for (const signal of SIGNALS) process.on(signal, this.onSignal);
    return this;
  }

  /** Gives the signals back to Node's defaults. */
  release(): void {
    for (const signal of SIGNALS) process.off(signal, this.onSignal);
  }

  /** Registers something started; once stopping has begun it is stopped at once and the start-up is interrupted. */
  async add(name: string, rank: StopRank, stop: () => Promise<void>, kill?: () => void): Promise<void> {
    const part = { name, rank, stop: once(stop), kill };
    this.parts.push(part);
    if (this.signal) {
      await this.stopping;
      await this.stopPart(part);
      throw new Interrupted(this.signal);
    }
  }

  /** Whether stopping has begun: a signal asked for it, or the command is done (`demo --exit`). */
  get stopRequested(): boolean {
    return this.signal !== null || this.stopping !== null;
  }

  /** Throws Interrupted when a signal came during start-up. */
  check(): void {
    if (this.signal) throw new Interrupted(this.signal);
  }

  /**
   * A start-up step that cannot be cancelled (a connection that retries for
   * as long as its server is away): a signal interrupts the wait for it at
   * once, and what it gives later is handed to `discard`.
   */
  async during<T>(step: Promise<T>, discard: (value: T) => unknown): Promise<T> {
    this.check();
    let interrupted = false;
    let settled = false;
    const signalled = this.interrupted.then((cause) => {
      interrupted = true;
      if (!settled) this.leftWorkBehind = true;
      throw new Interrupted(cause);
    });
    step
      .finally(() => {
        settled = true;
      })
      .then((value) => (interrupted ? discard(value) : undefined))
      .catch(() => undefined);
    return Promise.race([step, signalled]);
  }

  /** Stops every part once, in rank order, later-started first within a rank; never throws. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    for (const rank of RANKS) {
      for (const part of this.parts.filter((p) => p.rank === rank).reverse()) await this.stopPart(part);
    }
  }

  private async stopPart(part: Part): Promise<void> {
    try {
      await part.stop();
    } catch (err) {
      note(`could not stop the ${part.name} cleanly: ${(err as Error).message}`);
    }
  }

  /**
   * A part ended by itself (the caller has said so): a start-up in progress starts nothing more, and the rest
   * stop as after a signal. Without this, a start-up went on against a dead server, retrying for some 20 s.
   */
  partEnded(): void {
    this.aPartEnded = true;
    if (this.stopRequested) return;
    this.signal = 'a part ended by itself';
    this.resolveInterrupted(this.signal);
  }

  private readonly onSignal = (signal: NodeJS.Signals): void => {
    if (this.signal && this.signal !== 'a part ended by itself') {
      this.force(signal);
      return;
    }
    this.signal = signal;
    const started = Date.now();
    note(`\n${signal}: stopping${this.parts.length ? ` (${this.parts.map((p) => p.name).join(', ')})` : ''}; press Ctrl-C again to force …`);
    void this.stop().then(() => note(`stopped in ${duration(Date.now() - started)}`));
    this.resolveInterrupted(signal);
  };

  private force(signal: NodeJS.Signals): void {
    note(`${signal} again: exiting now`);
    for (const part of this.parts) {
      try {
        part.kill?.();
      } catch {
        // Already gone.
      }
    }
    this.exit(EXIT.forced);
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= fn();
    return running;
  };
}

/** A started service: what ends it by itself (a server that exited, a worker that failed), if anything. */
export interface Started {
  ended?: Promise<unknown>;
}

/**
 * Runs a foreground service: `start` starts its parts, registering each with
 * the lifecycle. The service runs until it ends by itself or a signal comes;
 * then every part stops. A failed start stops what had started and rethrows.
 */
export async function runService(start: (life: Lifecycle) => Promise<Started>): Promise<void> {
  const life = new Lifecycle().own();
  try {
    const { ended } = await start(life);
    await Promise.race([life.interrupted, ...(ended ? [ended] : [])]);
  } catch (err) {
    if (!(err instanceof Interrupted)) throw err;
  } finally {
    await life.stop();
    life.release();
    // A worker left draining against a server that died is expected to hold the process: no wait, no word.
    if (life.aPartEnded) process.exit(process.exitCode ?? 1);
    // A start-up step left behind (a worker still connecting to the server just stopped) retries for some 20 s: it is
    // known to hold the process, so there is nothing to wait for.
    if (life.leftWorkBehind) process.exit(process.exitCode ?? 0);
    exitIfStuck();
  }
}

/** Everything is stopped: should a forgotten handle keep the event loop alive, exit anyway rather than hang. */
function exitIfStuck(): void {
  setTimeout(() => {
    note('everything is stopped, but something kept the process alive; exiting');
    process.exit(process.exitCode ?? 0);
  }, 3_000).unref();
}
