/**
 * The limits a Temporal dev server is started with. Stock Temporal paces each
 * history shard's task queues at 20 reads a second; a dev server has one
 * shard, so a lone sequential run waits for the next read at every step once
 * the rate limiter's small burst is spent, and its timer queue moves a timer
 * due within a second to about a second. docs/operations.md says what each
 * value does, what `npm run bench` measured, and why it is safe.
 */
export const TUNED_DYNAMIC_CONFIG: Readonly<Record<string, number | string>> = {
  // Workflow and activity tasks reach matching through the transfer queue.
  'history.transferProcessorMaxPollRPS': 1000,
  // The timer queue reads this far ahead, and a timer due inside that window is moved past it: at the stock 1 s,
  // every model-call retry jittered between 0.5 and 1 s fired at ~1 s, in step with every other run's.
  'history.timerProcessorMaxTimeShift': '100ms',
};

/**
 * SQLite pragmas for a file-backed server: write-ahead logging with syncs at
 * checkpoints instead of at every commit.
 */
export const SQLITE_PRAGMAS: readonly string[] = ['journal_mode=wal', 'synchronous=normal'];

/**
 * `temporal server start-dev` flags for the tuned engine; pragmas only when the
 * state is in a file. A key the caller passes itself in `extraArgs` is left to
 * the caller: given twice, which value wins would be up to the CLI.
 */
export function engineFlags(opts: { db: string | null; extraArgs?: readonly string[] }): string[] {
  const extra = opts.extraArgs ?? [];
  const keyOf = (pair: string) => pair.slice(0, pair.indexOf('='));
  const own = new Set(extra.filter((_, i) => extra[i - 1] === '--dynamic-config-value').map(keyOf));
  const flags = Object.entries(TUNED_DYNAMIC_CONFIG)
    .filter(([key]) => !own.has(key))
    .flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]);
  if (opts.db) for (const pragma of SQLITE_PRAGMAS) flags.push('--sqlite-pragma', pragma);
  return flags;
}
