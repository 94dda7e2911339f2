/**
 * Which of a run's search attributes to upsert now. Every upsert is a history
 * event and a visibility write on the server (about as costly as an activity),
 * so a run publishes what lists filter on at once and batches its counters.
 *
 * - What a list filters on (state, emergency stop, model) is published the
 *   moment it changes, with any counters that changed riding along.
 * - Counters (steps, cost, consecutive errors) alone are published at most
 *   once per `COUNTER_REFRESH_MS` of workflow time: a run of fast steps adds
 *   one visibility write every few seconds, not one a step. A list shows them
 *   at most that interval, or one step, behind; a run's end publishes them.
 * - The run starts from what its start request set, so nothing the server
 *   already holds is upserted again.
 */

export type SearchAttributeValue = string | number | boolean;

/** Counters published alone at most this often. */
export const COUNTER_REFRESH_MS = 5_000;

export interface VisibilityPolicyOptions {
  /** The attributes that are counters; every other one is published at once. */
  counters: ReadonlySet<string>;
  /** What the server already holds (the run's start search attributes). */
  published: ReadonlyMap<string, SearchAttributeValue>;
  /** Workflow time the run started publishing; counters wait a full interval from here. */
  now: number;
  /** Runs recorded before batching upserted every change at once; their histories must replay the same. */
  batched: boolean;
}

export class VisibilityPolicy {
  private readonly published: Map<string, SearchAttributeValue>;
  private lastUpsertAt: number;

  constructor(private readonly opts: VisibilityPolicyOptions) {
    this.published = new Map(opts.batched ? opts.published : []);
    this.lastUpsertAt = opts.now;
  }

  /** The names to upsert now, given every attribute's current value; they count as published. */
  due(current: ReadonlyMap<string, SearchAttributeValue>, now: number): string[] {
    const changed = [...current].filter(([name, value]) => this.published.get(name) !== value).map(([name]) => name);
    if (!changed.length) return [];
    const urgent = !this.opts.batched || changed.some((name) => !this.opts.counters.has(name));
    if (!urgent && now - this.lastUpsertAt < COUNTER_REFRESH_MS) return [];
    for (const name of changed) this.published.set(name, current.get(name) as SearchAttributeValue);
    this.lastUpsertAt = now;
    return changed;
  }
}
