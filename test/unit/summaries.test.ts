import { describe, expect, it } from 'vitest';
import { claimSummary, compactionSummary, criticSummary, modelCallSummary, toolCallSummary, verificationSummary } from '../../src/run/summaries.js';
import { outputSummary } from '../../src/history/steps.js';

const call = (name: string, args: unknown) => ({ id: 'c', name, args });

describe('activity summaries for the Temporal UI', () => {
  it('name the tool and what it works on', () => {
    expect(toolCallSummary(call('shell', { command: 'npm test' }))).toBe('shell: npm test');
    expect(toolCallSummary(call('read_file', { path: 'src/a.ts' }))).toBe('read_file src/a.ts');
  });

  it("give a file's size, never its content", () => {
    const summary = toolCallSummary(call('write_file', { path: 'secret.env', content: 'API_KEY=abc123' }));
    expect(summary).toBe('write_file secret.env (14 chars)');
    expect(summary).not.toContain('abc123');
  });

  it('show the first line of a long command, cut with an ellipsis', () => {
    expect(toolCallSummary(call('shell', { command: 'cat <<EOF > a.txt\nline\nEOF' }))).toBe('shell: cat <<EOF > a.txt…');
    const long = toolCallSummary(call('shell', { command: 'x'.repeat(500) }));
    expect(long.length).toBeLessThanOrEqual('shell: '.length + 80);
    expect(long.endsWith('…')).toBe(true);
  });

  it('cope with arguments that are missing or not what the contract says', () => {
    expect(toolCallSummary(call('shell', undefined))).toBe('shell: ');
    expect(toolCallSummary(call('mystery', { path: 42 }))).toBe('mystery');
  });

  it('name the model and the step of a model call, counting steps from 1', () => {
    expect(modelCallSummary('openai:gpt-4.1-mini', 2)).toBe('callModel openai:gpt-4.1-mini step 3');
    expect(compactionSummary('openai:gpt-4.1-mini', 24)).toBe('summarizeTranscript openai:gpt-4.1-mini: 24 messages');
    expect(verificationSummary('npm test', 2)).toBe('verify attempt 2: npm test');
    expect(claimSummary('run-1')).toBe('claimWorkspace: bind run-1 to a worker');
    expect(criticSummary('openai:gpt-4.1-mini', 119_600, 7)).toBe('criticDecide openai:gpt-4.1-mini: idle 120s after step 7');
  });
});

describe("the one line of a tool's or a check's output that history and the timeline show", () => {
  it('is the line that states the error, where a stack trace begins with where it was thrown', () => {
    const stack =
      'node:internal/modules/run_main:123\n    triggerUncaughtException(\n    ^\n\nAssertionError [ERR_ASSERTION]: 3 should be Fizz\n    at file:///w/test.mjs:4:8';
    expect(outputSummary(stack)).toBe('AssertionError [ERR_ASSERTION]: 3 should be Fizz');
    expect(outputSummary('collecting…\nFAIL src/a.test.ts\n  ● adds')).toBe('FAIL src/a.test.ts');
  });

  it('is the first line with text otherwise, cut short', () => {
    expect(outputSummary('\n  a.txt\nb.txt')).toBe('a.txt');
    expect(outputSummary('x'.repeat(500))).toHaveLength(120);
    expect(outputSummary(undefined)).toBe('');
  });
});
