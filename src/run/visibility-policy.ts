/**
 * Which of a run's search attributes to upsert now. Every upsert is a history
 * event and a visibility write on the server (about as costly as an activity),
 * so a run upserts only what changed since the server last heard, and starts
 * from what its start request set rather than upserting it again.
 *
 * Counters are not batched over time: a step's count would then wait for the
 * next upsert, and a long tool call after a quick step would leave lists (and
 * `TetherSteps` filters) a step behind for as long as the call takes.
 */

export type SearchAttributeValue = string | number | boolean;

export class VisibilityPolicy {
  private readonly published: Map<string, SearchAttributeValue>;

  /** `published`: what the server already holds (the run's start search attributes, when its history is lean). */
  constructor(published: ReadonlyMap<string, SearchAttributeValue>) {
    this.published = new Map(published);
  }

  /** The names whose value changed since they were last published; they count as published. */
  due(current: ReadonlyMap<string, SearchAttributeValue>): string[] {
    const changed = [...current].filter(([name, value]) => this.published.get(name) !== value).map(([name]) => name);
    for (const name of changed) this.published.set(name, current.get(name) as SearchAttributeValue);
    return changed;
  }
}
