import { describe, expect, it } from 'vitest';
import type { RunStatus, TranscriptMessage } from '../../src/api/types.js';
import { nextView, transcriptDelta, transcriptKey } from '../../src/panel/transcript-delta.js';

const user = (content: string): TranscriptMessage => ({ role: 'user', content, source: 'goal' }) as TranscriptMessage;
const said = (...contents: string[]) => contents.map(user);
const status = (fields: Partial<RunStatus>) => ({ runId: 'r', step: 1, deadline: '2030-01-01T00:00:00.000Z', ...fields }) as RunStatus;

describe('transcript deltas for the panel', () => {
  it('sends a new watcher the whole transcript, then only the messages it has not seen', () => {
    let view = nextView(null, said('a', 'b'));
    const first = transcriptDelta(null, view)!;
    expect(first).toEqual({ epoch: 0, from: 0, messages: said('a', 'b'), length: 2 });
    view = nextView(view, said('a', 'b', 'c'));
    expect(transcriptDelta({ epoch: 0, length: 2 }, view)).toEqual({ epoch: 0, from: 2, messages: said('c'), length: 3 });
  });

  it('sends nothing to a watcher that is up to date', () => {
    const view = nextView(null, said('a'));
    expect(transcriptDelta({ epoch: 0, length: 1 }, view)).toBeNull();
  });

  it('resets every watcher when compaction rewrites the transcript', () => {
    const before = nextView(null, said('goal', 'old 1', 'old 2', 'recent'));
    const compacted = nextView(before, said('goal', 'summary', 'recent', 'new'));
    expect(compacted.epoch).toBe(1);
    expect(transcriptDelta({ epoch: 0, length: 4 }, compacted)).toEqual({ epoch: 1, from: 0, messages: said('goal', 'summary', 'recent', 'new'), length: 4 });
  });

  it('treats a shorter transcript as rewritten', () => {
    const view = nextView(nextView(null, said('a', 'b', 'c')), said('a', 'b'));
    expect(view.epoch).toBe(1);
    expect(transcriptDelta({ epoch: 0, length: 3 }, view)?.from).toBe(0);
  });

  it('asks for the transcript again only when the run reports it changed', () => {
    const a = transcriptKey(status({ transcriptEpoch: 0, transcriptLength: 4, deadline: '2030-01-01T00:00:00.000Z' }));
    expect(transcriptKey(status({ transcriptEpoch: 0, transcriptLength: 4, deadline: '2031-01-01T00:00:00.000Z', step: 2 }))).toBe(a);
    expect(transcriptKey(status({ transcriptEpoch: 0, transcriptLength: 5 }))).not.toBe(a);
    expect(transcriptKey(status({ transcriptEpoch: 1, transcriptLength: 4 }))).not.toBe(a);
  });

  it('falls back to any change but the deadline when the worker does not report transcript counters', () => {
    const a = transcriptKey(status({ step: 1 }));
    expect(transcriptKey(status({ step: 1, deadline: '2031-01-01T00:00:00.000Z' }))).toBe(a);
    expect(transcriptKey(status({ step: 2 }))).not.toBe(a);
  });
});
