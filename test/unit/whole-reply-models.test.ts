import { describe, expect, it } from 'vitest';
import { WholeReplyModels } from '../../src/llm/whole-reply-models.js';

describe('models asked for whole replies after a garbled stream', () => {
  it('are asked whole for a while, then streamed again', () => {
    const models = new WholeReplyModels(60_000);
    expect(models.prefersWhole('openai:proxy', 0)).toBe(false);
    models.remember('openai:proxy', 0);
    expect(models.prefersWhole('openai:proxy', 59_999)).toBe(true);
    expect(models.prefersWhole('openai:other', 1)).toBe(false);
    expect(models.prefersWhole('openai:proxy', 60_000)).toBe(false);
  });

  it('forget the oldest beyond their bound', () => {
    const models = new WholeReplyModels(60_000, 2);
    for (const m of ['a', 'b', 'c']) models.remember(m, 0);
    expect(['a', 'b', 'c'].map((m) => models.prefersWhole(m, 1))).toEqual([false, true, true]);
  });
});
