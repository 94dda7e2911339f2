import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ToolResult } from '../api/types.js';
import { scrubEnv } from './env.js';
import { capOutput } from './output-cap.js';
import { runProcess, type ProcessProgress } from './process-runner.js';
import { parseToolArgs } from './registry.js';
import { resolveInWorkspace, WorkspaceEscapeError, writeFileAtomic } from './workspace.js';

export type ActivityToolName = 'shell' | 'read_file' | 'write_file';

export interface ToolContext {
  workspace: string;
  callId: string;
  timeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (progress: ProcessProgress) => void;
  env?: NodeJS.ProcessEnv;
}

/** Characters of tool output the model sees; the rest is in the workspace. */
export const MAX_OUTPUT_CHARS = 16_000;
const MAX_READ_CHARS = 100_000;

/** Workspace-relative path of a call's full output. */
export function outputPath(callId: string): string {
  return path.join('.tether', 'outputs', `${callId.replace(/[^A-Za-z0-9_-]/g, '_')}.log`);
}

/**
 * Runs one workspace tool. Every failure the model can act on (bad
 * arguments, a non-zero exit, a timeout, a path outside the workspace) is a
 * result; only cancellation throws, because then nobody is waiting for one.
 */
export async function executeTool(name: ActivityToolName, rawArgs: unknown, ctx: ToolContext): Promise<ToolResult> {
  const parsed = parseToolArgs(name, rawArgs);
  if (!parsed.ok) return { success: false, error: `invalid arguments: ${parsed.error}`, output: '' };
  const started = Date.now();
  try {
    switch (name) {
      case 'shell':
        return await shell(parsed.args as { command: string; timeoutMs?: number }, ctx);
      case 'read_file':
        return await read((parsed.args as { path: string }).path, ctx);
      case 'write_file': {
        const args = parsed.args as { path: string; content: string };
        const file = await resolveInWorkspace(ctx.workspace, args.path);
        await writeFileAtomic(file, args.content);
        return { success: true, output: `wrote ${Buffer.byteLength(args.content)} bytes to ${args.path}`, durationMs: Date.now() - started };
      }
      default:
        return { success: false, error: `tool ${String(name)} does not run in the workspace`, output: '' };
    }
  } catch (err) {
    if (ctx.signal?.aborted) throw ctx.signal.reason ?? err;
    const message = err instanceof WorkspaceEscapeError ? err.message : `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${(err as Error).message}`;
    return { success: false, error: message, output: '', durationMs: Date.now() - started };
  }
}

async function shell(args: { command: string; timeoutMs?: number }, ctx: ToolContext): Promise<ToolResult> {
  const timeoutMs = Math.min(args.timeoutMs ?? ctx.timeoutMs, ctx.timeoutMs);
  const rel = outputPath(ctx.callId);
  const outcome = await runProcess({
    command: args.command,
    cwd: ctx.workspace,
    env: scrubEnv(ctx.env ?? process.env),
    timeoutMs,
    signal: ctx.signal,
    outputFile: path.join(ctx.workspace, rel),
    maxOutputChars: MAX_OUTPUT_CHARS,
    onProgress: ctx.onProgress,
  });
  if (outcome.aborted) throw ctx.signal?.reason ?? new Error('tool cancelled');
  const base = { exitCode: outcome.exitCode, durationMs: outcome.durationMs, output: outcome.output, ...(outcome.truncated ? { truncated: true, fullOutputPath: rel } : {}) };
  if (outcome.timedOut) return { ...base, success: false, error: `command timed out after ${Math.round(timeoutMs / 100) / 10}s (process tree killed)` };
  if (outcome.exitCode !== 0) return { ...base, success: false, error: outcome.signal ? `command killed by ${outcome.signal}` : `command exited with ${outcome.exitCode}` };
  return { ...base, success: true };
}

async function read(requested: string, ctx: ToolContext): Promise<ToolResult> {
  const file = await resolveInWorkspace(ctx.workspace, requested);
  const info = await stat(file);
  if (info.isDirectory()) return { success: false, error: `${requested} is a directory`, output: '' };
  const content = await readFile(file, 'utf8');
  const capped = capOutput(content, MAX_READ_CHARS, requested);
  return { success: true, output: capped.text, ...(capped.truncated ? { truncated: true } : {}) };
}
