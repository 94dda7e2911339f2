import { describe, expect, it } from 'vitest';
import { parseRunSpec } from '../../src/api/spec.js';

const base = { goal: 'g', model: 'scripted:x' };

describe('a RunSpec with a value outside a list', () => {
  it('names the value it was given and every value it takes', () => {
    expect(() => parseRunSpec({ ...base, tools: ['shell', 'teleport'] })).toThrow(
      'tools.1: tool "teleport" is not one of shell, read_file, write_file, finish, ask_user, delegate',
    );
    expect(() => parseRunSpec({ ...base, critic: { policy: 'strict' } })).toThrow('critic.policy: critic policy "strict" is not one of extend-once, llm, off');
    expect(() => parseRunSpec({ ...base, sandbox: { mode: 'docker' } })).toThrow('sandbox.mode: sandbox mode "docker" is not one of bwrap, off');
    expect(() => parseRunSpec({ ...base, tools: [7] })).toThrow('tools.0: tool 7 is not one of shell');
  });

  it('says a missing value is required, and cuts a long one short', () => {
    expect(() => parseRunSpec({ ...base, approvals: [{}] })).toThrow('approvals.0.tool: tool is required: one of shell');
    const message = (() => {
      try {
        parseRunSpec({ ...base, tools: ['x'.repeat(100_000)] });
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(message).toMatch(/tool "x{56}\.\.\. is not one of/);
    expect(message!.length).toBeLessThan(200);
  });
});
