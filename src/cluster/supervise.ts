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
export function superviseCluster(dir: string, opts: { restart: RestartPolicy; say: (message: string) => void }): Supervision {
  const history = new Map<string, RestartHistory>();
  const reported = new Set<string>();
  const pending = new Map<string, Promise<void>>();
  let stopped = false;
  const stopping = new AbortController();
  let recording = Promise.resolve();
  let endWatch: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    endWatch = resolve;
  });

  // One state write at a time: two parts restarted together must not undo each other's record.
  const record = (update: () => Promise<void>) => {
    recording = recording.then(update, update);
    return recording;
  };

  const restart = async (key: string, name: string, delayMs: number) => {
    if (delayMs >= 1_000) opts.say(`${name} stopped; starting it again in ${Math.round(delayMs / 1_000)} s`);
    await sleep(delayMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    const state = await readState(dir);
    const part = state && partsOf(state).find((p) => p.key === key);
    if (stopped || !state || !part || part.running) return;
    try {
      const recordRestart = await relaunch(dir, state, key);
      await record(async () => {
        const fresh = await readState(dir);
        if (!fresh) return;
        const pid = recordRestart(fresh);
        await writeState(dir, fresh);
        opts.say(`${name} stopped; started it again (pid ${pid})`);
      });
    } catch (err) {
      opts.say(`${name} stopped, and could not be started again: ${(err as Error).message.split('\n')[0]}`);
    }
    history.set(key, { lastDelayMs: delayMs, startedAt: Date.now() });
  };

  const look = async () => {
    const state = await readState(dir).catch(() => undefined);
    if (state === null) {
      endWatch();
      return;
    }
    if (!state || stopped) return;
    for (const part of partsOf(state)) {
      if (part.running || pending.has(part.key)) {
        if (part.running) reported.delete(part.key);
        continue;
      }
      if (opts.restart === 'no') {
        if (!reported.has(part.key)) opts.say(`${part.name} is not running (logs in ${dir}/logs)`);
        reported.add(part.key);
        continue;
      }
      const delay = restartDelay(history.get(part.key), Date.now());
      const attempt = restart(part.key, part.name, delay).finally(() => pending.delete(part.key));
      pending.set(part.key, attempt);
    }
  };

  const timer = setInterval(() => void look(), WATCH_MS);
  return {
    ended,
    async stop() {
      stopped = true;
      stopping.abort();
      clearInterval(timer);
      await Promise.allSettled(pending.values());
      await recording;
    },
  };
}
