import { setTimeout as sleep } from 'node:timers/promises';
import { partsOf, relaunch } from './relaunch.js';
import { type RestartHistory, type RestartPolicy, restartDelay } from './restart-policy.js';
import { readState, writeState } from './state.js';

/** How often the supervisor looks at its processes. */
const WATCH_MS = 1_000;

export interface Supervision {
  /** Resolves when the cluster's state is gone (`down` removed it): nothing is left to supervise. */
  ended: Promise<void>;
  /** Stops looking and waits for a restart under way to be recorded, so `down` sees its process. */
  stop(): Promise<void>;
}

/**
 * Watches the parts `up` started. With `unless-stopped` a part that stops is
 * started again, after the restart policy's delay; with `no` the supervisor
 * only says that it stopped, once. Every restart is recorded in the state
 * file, so `status` and `down` see the new process.
 */
export function superviseCluster(dir: string, opts: SupervisorOptions): Supervision {
  const supervisor = new ClusterSupervisor(dir, opts);
  const timer = setInterval(() => void supervisor.look(), WATCH_MS);
  return {
    ended: supervisor.ended,
    async stop() {
      clearInterval(timer);
      await supervisor.stop();
    },
  };
}

interface SupervisorOptions {
  restart: RestartPolicy;
  say: (message: string) => void;
}

class ClusterSupervisor {
  private readonly history = new Map<string, RestartHistory>();
  /** Parts already said to be down (restart policy `no`), until they run again. */
  private readonly reported = new Set<string>();
  private readonly pending = new Map<string, Promise<void>>();
  private stopped = false;
  private readonly stopping = new AbortController();
  private recording = Promise.resolve();
  private endWatch: () => void = () => {};
  readonly ended = new Promise<void>((resolve) => {
    this.endWatch = resolve;
  });

  constructor(
    private readonly dir: string,
    private readonly opts: SupervisorOptions,
  ) {}

  /** One look at every part: each that stopped is reported, or started again after its delay. */
  async look(): Promise<void> {
    const state = await readState(this.dir).catch(() => undefined);
    if (state === null) {
      this.endWatch();
      return;
    }
    if (!state || this.stopped) return;
    for (const part of partsOf(state)) {
      if (part.running || this.pending.has(part.key)) {
        if (part.running) this.reported.delete(part.key);
        continue;
      }
      if (this.opts.restart === 'no') {
        if (!this.reported.has(part.key)) this.opts.say(`${part.name} is not running (logs in ${this.dir}/logs)`);
        this.reported.add(part.key);
        continue;
      }
      const delay = restartDelay(this.history.get(part.key), Date.now());
      const attempt = this.restart(part.key, part.name, delay).finally(() => this.pending.delete(part.key));
      this.pending.set(part.key, attempt);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    await Promise.allSettled(this.pending.values());
    await this.recording;
  }

  private async restart(key: string, name: string, delayMs: number): Promise<void> {
    if (delayMs >= 1_000) this.opts.say(`${name} stopped; starting it again in ${Math.round(delayMs / 1_000)} s`);
    await sleep(delayMs, undefined, { signal: this.stopping.signal }).catch(() => undefined);
    const state = await readState(this.dir);
    const part = state && partsOf(state).find((p) => p.key === key);
    if (this.stopped || !state || !part || part.running) return;
    try {
      const recordRestart = await relaunch(this.dir, state, key);
      await this.record(async () => {
        const fresh = await readState(this.dir);
        if (!fresh) return;
        const pid = recordRestart(fresh);
        await writeState(this.dir, fresh);
        this.opts.say(`${name} stopped; started it again (pid ${pid})`);
      });
    } catch (err) {
      this.opts.say(`${name} stopped, and could not be started again: ${(err as Error).message.split('\n')[0]}`);
    }
    this.history.set(key, { lastDelayMs: delayMs, startedAt: Date.now() });
  }

  /** One state write at a time: two parts restarted together must not undo each other's record. */
  private record(update: () => Promise<void>): Promise<void> {
    this.recording = this.recording.then(update, update);
    return this.recording;
  }
}
