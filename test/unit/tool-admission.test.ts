import { describe, expect, it } from 'vitest';
import { admitToolCall } from '../../src/run/tool-admission.js';

const allowed = ['shell', 'read_file', 'finish'] as const;
const call = (name: string, args: unknown, argsError?: string) => ({ id: 'c1', name, args, ...(argsError ? { argsError } : {}) });

describe('tool admission', () => {
  it('admits a known, allowed call with valid arguments as a typed invocation', () => {
    expect(admitToolCall(call('shell', { command: 'ls' }), allowed, null)).toEqual({ kind: 'run', invocation: { name: 'shell', args: { command: 'ls' } } });
  });

  it('refuses a tool the contract does not know, listing the ones this run has', () => {
    expect(admitToolCall(call('rm_rf', {}), allowed, null)).toEqual({
      kind: 'refused',
      result: { success: false, error: 'unknown tool "rm_rf"; available: shell, read_file, finish', output: '' },
    });
  });

  it('refuses a contract tool that this run was not given', () => {
    expect(admitToolCall(call('write_file', { path: 'a', content: 'b' }), allowed, null)).toMatchObject({
      kind: 'refused',
      result: { error: 'tool "write_file" is not enabled for this run; available: shell, read_file, finish' },
    });
  });

  it('refuses arguments that are not JSON, with what the provider said', () => {
    expect(admitToolCall(call('shell', undefined, 'Unexpected token } in JSON'), allowed, null)).toMatchObject({
      kind: 'refused',
      result: { error: 'invalid arguments (not JSON): Unexpected token } in JSON' },
    });
  });

  it('refuses arguments that break the schema, naming each field', () => {
    expect(admitToolCall(call('shell', { command: '', extra: 1 }), allowed, null)).toMatchObject({
      kind: 'refused',
      result: { error: expect.stringMatching(/^invalid arguments: shell: .*command: command must not be empty/) },
    });
  });

  it('does not run anything while the run is paused, and says why without counting it as a failure', () => {
    expect(admitToolCall(call('shell', { command: 'ls' }), allowed, 'emergency_stopped')).toEqual({
      kind: 'not_run',
      result: { success: false, error: 'not run: the run is emergency_stopped', output: '' },
    });
  });
});
