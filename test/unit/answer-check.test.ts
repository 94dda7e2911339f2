import { describe, expect, it } from 'vitest';
import { notAnAnswer } from '../../src/run/answer-check.js';

describe('whether a reply with no tool call is an answer that ends the run', () => {
  it('is one when it says something and was not cut off', () => {
    expect(notAnAnswer({ text: 'The answer is 42.', finishReason: 'stop' })).toBeNull();
    expect(notAnAnswer({ text: 'done', finishReason: 'unknown' })).toBeNull();
  });

  it('is none when empty or blank, cut off at the output limit, or withheld by a content filter', () => {
    expect(notAnAnswer({ text: '', finishReason: 'stop' })?.failure).toBe("the model's reply was empty: no text and no tool call");
    // A reply that ended for a tool call it does not hold: the server's format, most likely, not the model's silence.
    expect(notAnAnswer({ text: '', finishReason: 'tool-calls' })?.failure).toMatch(
      /held no tool call Tether could read \(a server that answers in the legacy function_call format/,
    );
    expect(notAnAnswer({ text: ' \n\t ', finishReason: 'stop' })?.notice).toContain('Your last reply was empty');
    expect(notAnAnswer({ text: 'This answer was cut off mid', finishReason: 'length' })?.notice).toContain('cut off at the output limit');
    expect(notAnAnswer({ text: '', finishReason: 'content-filter' })?.failure).toContain('content filter');
  });
});
