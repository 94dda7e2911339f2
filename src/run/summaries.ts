import type { ToolCall } from '../api/types.js';

/**
 * One-line summaries of a run's activities for the Temporal UI and CLI, so a
 * history shows which tool ran on what (`shell: npm test`). Short, first
 * line only, and never a file's content: a summary is for recognising a call,
 * the full arguments are in the activity's input.
 */

const MAX = 80;

/** The first line, cut at MAX characters; an ellipsis says something was left out. */
function clip(text: string): string {
  const trimmed = text.trim();
  const line = trimmed.split('\n', 1)[0]!.trimEnd();
  if (line.length <= MAX && line === trimmed) return line;
  return `${line.slice(0, MAX - 1)}…`;
}

function field(args: unknown, name: string): string | undefined {
  const value = args && typeof args === 'object' ? (args as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' ? value : undefined;
}

/** `shell: npm test`, `read_file src/a.ts`, `write_file src/a.ts (120 chars)`. */
export function toolCallSummary(call: ToolCall): string {
  const path = field(call.args, 'path');
  switch (call.name) {
    case 'shell':
      return `shell: ${clip(field(call.args, 'command') ?? '')}`;
    case 'write_file':
      return `write_file ${clip(path ?? '')} (${field(call.args, 'content')?.length ?? 0} chars)`;
    default:
      return path !== undefined ? `${call.name} ${clip(path)}` : call.name;
  }
}

/** `callModel openai:gpt-4.1-mini step 3` (steps counted from 1, as the panel shows them). */
export function modelCallSummary(model: string, step: number): string {
  return `callModel ${model} step ${step + 1}`;
}

/** `summarizeTranscript openai:gpt-4.1-mini: 24 messages`. */
export function compactionSummary(model: string, messages: number): string {
  return `summarizeTranscript ${model}: ${messages} messages`;
}

/** `verify attempt 2: npm test`. */
export function verificationSummary(command: string, attempt: number): string {
  return `verify attempt ${attempt}: ${clip(command)}`;
}

/** `claimWorkspace: bind run-1 to a worker`. */
export function claimSummary(runId: string): string {
  return `claimWorkspace: bind ${runId} to a worker`;
}

/** `checkpoint: the workspace before delegate call_1` (or after). */
export function checkpointSummary(call: ToolCall, when: 'before' | 'after'): string {
  return `checkpoint: the workspace ${when} ${call.name} ${call.id}`;
}

/** `claimWorkspace: is the worker holding run-1's workspace still there?`. */
export function holderCheckSummary(runId: string): string {
  return `claimWorkspace: is the worker holding ${runId}'s workspace still there?`;
}

/** `criticDecide openai:gpt-4.1-mini: idle 120s after step 7`. */
export function criticSummary(model: string, idleMs: number, step: number): string {
  return `criticDecide ${model}: idle ${Math.round(idleMs / 1000)}s after step ${step}`;
}
