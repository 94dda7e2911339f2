import { describe, expect, it } from 'vitest';
import { Transcript } from '../../src/run/transcript.js';

describe('the transcript', () => {
  it('starts with the goal and moves queued steers in, in order, only when asked', () => {
    const transcript = new Transcript('the goal');
    expect([transcript.queueSteer('first'), transcript.queueSteer('second')]).toEqual([1, 2]);
    expect(transcript.messages).toHaveLength(1);
    expect(transcript.takeSteers()).toEqual(['first', 'second']);
    expect(transcript.messages.map((m) => m.content)).toEqual(['the goal', 'first', 'second']);
    expect(transcript.takeSteers()).toEqual([]);
  });

  it('rewrites itself in place on compaction and counts the rewrite, so a cached copy is known to be stale', () => {
    const transcript = new Transcript('the goal');
    const messages = transcript.messages;
    transcript.push({ role: 'assistant', content: 'a' });
    transcript.push({ role: 'user', content: 'b' });
    transcript.compact({ head: [messages[0]!], middle: [messages[1]!, messages[2]!], tail: [] }, 'did a and b');
    expect(transcript.messages).toBe(messages);
    expect(transcript.messages).toHaveLength(2);
    expect(transcript.messages[1]).toMatchObject({ source: 'summary', content: expect.stringContaining('did a and b') });
    expect(transcript.rewrites).toBe(1);
  });

  it('waits three steps after a failed compaction before it is due again', () => {
    const transcript = new Transcript('x'.repeat(100));
    expect(transcript.compactionDue(0, 50)).toBe(true);
    expect(transcript.compactionDue(0, 500)).toBe(false);
    transcript.compactionFailed(4);
    expect([5, 6, 7].map((step) => transcript.compactionDue(step, 50))).toEqual([false, false, true]);
  });

  it('survives a snapshot with its queued steers and epoch', () => {
    const transcript = new Transcript('g');
    transcript.queueSteer('later');
    const restored = new Transcript('ignored', JSON.parse(JSON.stringify(transcript.snapshot())));
    expect(restored.takeSteers()).toEqual(['later']);
    expect(restored.messages[0]?.content).toBe('g');
  });
});
