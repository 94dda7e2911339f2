import { describeBytes, MAX_REPLY_ARGS_BYTES } from '../api/payload-limits.js';
import type { ToolName } from '../api/spec.js';
import { NOT_RUN, parseToolCall, type ToolInvocation, TOOLS } from '../api/tools.js';
import type { ToolCall, ToolResult } from '../api/types.js';

/**
 * Whether a tool call may run. `refused` calls are the model's mistakes: they
 * become error results it reads, and they count towards the emergency stop.
 * `not_run` calls were never started (the run paused under them): the model
 * still gets a result for each, as providers require, but nothing counts.
 */
export type Admission = { kind: 'run'; invocation: ToolInvocation } | { kind: 'refused'; result: ToolResult } | { kind: 'not_run'; result: ToolResult };

const failure = (error: string): ToolResult => ({ success: false, error, output: '' });

/**
 * Admits one tool call: not while the run is paused, only tools this run's
 * spec allows, only arguments that are JSON and match the tool's schema.
 */
export function admitToolCall(call: ToolCall, allowed: readonly ToolName[], pausedAs: string | null): Admission {
  if (pausedAs !== null) return { kind: 'not_run', result: failure(`${NOT_RUN.refused}the run is ${pausedAs}`) };
  if (!allowed.some((name) => name === call.name)) {
    const what = Object.hasOwn(TOOLS, call.name) ? `tool "${call.name}" is not enabled for this run` : `unknown tool "${call.name}"`;
    return { kind: 'refused', result: failure(`${what}; available: ${allowed.join(', ')}`) };
  }
  if (call.argsBytes !== undefined) return { kind: 'refused', result: failure(oversizedArgsError(call.argsBytes)) };
  if (call.argsError) return { kind: 'refused', result: failure(`invalid arguments (not JSON): ${call.argsError}`) };
  const parsed = parseToolCall(call.name, call.args);
  if (!parsed.ok) return { kind: 'refused', result: failure(`invalid arguments: ${parsed.error}`) };
  return { kind: 'run', invocation: parsed.invocation };
}

/** What the model reads for a call whose arguments were dropped for their size (src/llm/reply-limits.ts). */
export function oversizedArgsError(bytes: number): string {
  return `arguments too large (${describeBytes(bytes)}): the tool calls of one reply may carry at most ${describeBytes(MAX_REPLY_ARGS_BYTES)} of arguments together. Write a large file in parts: write_file the first part, then append the rest with shell.`;
}
