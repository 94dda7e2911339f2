import type { RunSpec } from '../api/spec.js';
import type { ToolResult } from '../api/types.js';

/** The system prompt when the spec gives none: what the agent is, and how a run ends. */
export function defaultSystemPrompt(spec: RunSpec): string {
  const tools = spec.tools.join(', ');
  return [
    'You are an autonomous agent working towards a goal inside a private workspace directory.',
    `Tools available: ${tools}. Paths are relative to the workspace; you cannot leave it.`,
    'Work in small verified steps. When the goal is done, call `finish` with a short summary of what you did.',
    spec.verify ? `Before the run completes, \`${spec.verify.command}\` is run in the workspace; it must pass.` : '',
    'A tool failure is reported back to you as its result: read it and adapt rather than repeating the same call.',
  ]
    .filter(Boolean)
    .join('\n');
}

/** The system prompt a run's model calls get: the spec's own, or the default. */
export function systemPromptOf(spec: RunSpec): string {
  return spec.system ?? defaultSystemPrompt(spec);
}

/** `result` with `note` read first, before its output. */
export function withOutputNote(result: ToolResult, note: string): ToolResult {
  return { ...result, output: result.output ? `${note}\n${result.output}` : note };
}

/** The text a model reads for a tool result. */
export function toolResultText(result: ToolResult): string {
  const parts: string[] = [];
  if (!result.success) parts.push(`Error: ${result.error ?? 'the tool failed'}`);
  if (result.exitCode !== undefined && result.exitCode !== null && result.exitCode !== 0) parts.push(`(exit code ${result.exitCode})`);
  if (result.output) parts.push(result.output);
  if (result.truncated && result.fullOutputPath) parts.push(`[output truncated; full output in ${result.fullOutputPath}]`);
  return parts.join('\n') || '(no output)';
}
