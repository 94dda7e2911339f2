import { describe, expect, it } from 'vitest';
import { parseToolArgs, parseToolCall, toolDefinition, toolJsonSchemas } from '../../src/api/tools.js';

describe('the tool contract', () => {
  it('knows the six contract tools and nothing else, whatever the name', () => {
    expect(['shell', 'read_file', 'write_file', 'finish', 'ask_user', 'delegate'].every((name) => toolDefinition(name))).toBe(true);
    expect(toolDefinition('constructor')).toBeUndefined();
    expect(toolDefinition('__proto__')).toBeUndefined();
  });

  it('marks the tools that must not be re-run blindly after a crash', () => {
    expect(['shell', 'delegate'].map((name) => toolDefinition(name)?.idempotent)).toEqual([false, false]);
    expect(['read_file', 'write_file', 'finish', 'ask_user'].every((name) => toolDefinition(name)?.idempotent)).toBe(true);
  });

  it('parses a call into an invocation whose arguments are typed by its name', () => {
    const parsed = parseToolCall('delegate', { goal: 'sub', tools: ['shell'] });
    expect(parsed).toEqual({ ok: true, invocation: { name: 'delegate', args: { goal: 'sub', tools: ['shell'] } } });
    if (parsed.ok && parsed.invocation.name === 'delegate') expect(parsed.invocation.args.tools).toEqual(['shell']);
  });

  it('lists every problem with the arguments, by field', () => {
    expect(parseToolArgs('write_file', { path: '', extra: true })).toEqual({
      ok: false,
      error: expect.stringMatching(/^write_file: .*path: path must not be empty.*content/),
    });
    expect(parseToolCall('delegate', { goal: 'x', model: 'gpt' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('model: model must be provider:name'),
    });
  });

  it('offers the model JSON schemas without the $schema key', () => {
    const schemas = toolJsonSchemas(['shell', 'finish']);
    expect(Object.keys(schemas)).toEqual(['shell', 'finish']);
    expect(schemas.shell?.parameters).toMatchObject({ type: 'object', required: ['command'] });
    expect(schemas.shell?.parameters).not.toHaveProperty('$schema');
  });
});
