import { describe, expect, it } from 'vitest';
import type { TranscriptMessage } from '../../src/api/types.js';
import { planCompaction, summaryMessage, transcriptChars } from '../../src/run/compaction.js';

const goal: TranscriptMessage = { role: 'user', content: 'the goal', source: 'goal' };
const turn = (i: number): TranscriptMessage[] => [
  { role: 'assistant', content: `step ${i}`, toolCalls: [{ id: `c${i}`, name: 'shell', args: { command: `echo ${i}` } }] },
  { role: 'tool', toolCallId: `c${i}`, toolName: 'shell', content: `${i}`, success: true },
];
const transcriptOf = (turns: number) => [goal, ...Array.from({ length: turns }, (_, i) => turn(i)).flat()];

describe('compaction planning', () => {
  it('keeps the goal and the most recent turns, and summarises what lies between', () => {
    const transcript = transcriptOf(10);
    const plan = planCompaction(transcript)!;
    expect(plan.head).toEqual([goal]);
    expect(plan.tail).toHaveLength(8);
    expect(plan.middle).toHaveLength(transcript.length - 9);
    expect([...plan.head, ...plan.middle, ...plan.tail]).toEqual(transcript);
  });

  it('never starts the kept tail with a tool result, which would separate it from its call', () => {
    const transcript = [
      goal,
      ...turn(0),
      ...turn(1),
      ...turn(2),
      turn(3)[0]!,
      turn(3)[1]!,
      { role: 'user', content: 'steer', source: 'steer' } as TranscriptMessage,
    ];
    for (const keep of [2, 3, 4, 5]) {
      const plan = planCompaction(transcript, keep)!;
      expect(plan.tail[0]?.role).not.toBe('tool');
      expect(plan.middle.at(-1)?.role).not.toBe('assistant');
    }
  });

  it('keeps half of a short transcript, so even an early overflow has something to summarise', () => {
    // Three turns: the goal, one turn to summarise, and the last two turns kept whole.
    const plan = planCompaction(transcriptOf(3))!;
    expect(plan.middle).toEqual(turn(0));
    expect(plan.tail).toEqual([...turn(1), ...turn(2)]);
  });

  it('has nothing to summarise in a transcript of one turn', () => {
    expect(planCompaction(transcriptOf(1))).toBeNull();
    expect(planCompaction([goal])).toBeNull();
  });

  it('measures a transcript by its characters, tool calls included', () => {
    expect(transcriptChars([goal])).toBe('the goal'.length);
    const [call] = turn(0);
    expect(transcriptChars([call!])).toBe('step 0'.length + JSON.stringify({ command: 'echo 0' }).length + 'shell'.length);
  });

  it('stands the summary in for the turns it replaces, saying how many', () => {
    expect(summaryMessage('did a and b', 12)).toEqual({
      role: 'user',
      source: 'summary',
      content: '[Summary of 12 earlier messages, compacted to fit the context window]\ndid a and b',
    });
  });
});
