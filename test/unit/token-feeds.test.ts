import { describe, expect, it } from 'vitest';
import type { TokenEvent } from '../../src/api/token-stream.js';
import { type FollowRun, RunTokenFeeds, type TokenPage } from '../../src/panel/token-feeds.js';

/** A follower the test drives: each run's emit, and whether its follower is still going. */
function fakeFollow() {
  const runs = new Map<string, { emit: (event: TokenEvent) => void; end: () => void; aborted: () => boolean }>();
  const started: string[] = [];
  const follow: FollowRun = (runId, onEvent, signal) =>
    new Promise<void>((resolve) => {
      started.push(runId);
      signal.addEventListener('abort', () => resolve());
      runs.set(runId, { emit: onEvent, end: resolve, aborted: () => signal.aborted });
    });
  return { follow, runs, started };
}

function page() {
  const events: TokenEvent[] = [];
  let done = false;
  const p: TokenPage = { event: (e) => events.push(e), done: () => (done = true) };
  return { p, events, done: () => done };
}

const token = (text: string, step = 1, attempt = 1): TokenEvent => ({ type: 'token', step, attempt, text });

describe("the panel's live-token feeds", () => {
  it('follows each run once for all the pages that watch it, and stops when the last page goes', () => {
    const { follow, runs, started } = fakeFollow();
    const feeds = new RunTokenFeeds(follow);
    const [a, b] = [page(), page()];
    const leaveA = feeds.join('r1', a.p);
    const leaveB = feeds.join('r1', b.p);
    expect(started).toEqual(['r1']);
    runs.get('r1')!.emit(token('hel'));
    expect(a.events).toEqual([token('hel')]);
    expect(b.events).toEqual([token('hel')]);
    leaveA();
    expect(runs.get('r1')!.aborted()).toBe(false);
    leaveB();
    expect(runs.get('r1')!.aborted()).toBe(true);
    expect(feeds.size).toBe(0);
  });

  it('sends a page that joins mid-call the text so far, and nothing of a call that ended', () => {
    const { follow, runs } = fakeFollow();
    const feeds = new RunTokenFeeds(follow);
    feeds.join('r1', page().p);
    const run = runs.get('r1')!;
    run.emit(token('hel'));
    run.emit(token('lo'));
    const late = page();
    feeds.join('r1', late.p);
    expect(late.events).toEqual([token('hello')]);
    run.emit({ type: 'token_end', step: 1, attempt: 1, ok: true });
    run.emit(token('next', 2));
    const later = page();
    feeds.join('r1', later.p);
    expect(later.events).toEqual([token('next', 2)]);
  });

  it('tells every page when the run closes, and follows afresh for a page that comes after', async () => {
    const { follow, runs, started } = fakeFollow();
    const feeds = new RunTokenFeeds(follow);
    const a = page();
    feeds.join('r1', a.p);
    runs.get('r1')!.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(a.done()).toBe(true);
    expect(feeds.size).toBe(0);
    feeds.join('r1', page().p);
    expect(started).toEqual(['r1', 'r1']);
  });
});
