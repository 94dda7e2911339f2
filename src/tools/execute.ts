import { sandboxSchema, type SandboxSpec } from '../api/spec.js';
import type { ToolResult } from '../api/types.js';
import { type SandboxHost, sandboxHost } from './host-probe.js';
import { describeExit, type JailedProgress, runJailed } from './jail-run.js';
import { parseToolCall } from '../api/tools.js';
import { readBounded } from './safe-read.js';
import { tetherHome } from '../api/home.js';
import { secretPaths } from './secret-paths.js';
import { resolveInWorkspace, WorkspaceEscapeError, writeFileAtomic } from './workspace.js';

export interface ToolContext {
  workspace: string;
  callId: string;
  timeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (progress: JailedProgress) => void;
  /** The worker's environment; tools get only an allow-listed part of it. */
  env?: NodeJS.ProcessEnv;
  /** The run's sandbox settings (defaults when absent). */
  sandbox?: SandboxSpec;
  /** What this machine allows (probed once when absent). */
  host?: SandboxHost;
}

/** Characters of tool output the model sees; more is in the output log in the workspace. */
export const MAX_OUTPUT_CHARS = 16_000;
/** Bytes of a file read_file returns at most (its head and tail when larger). */
export const MAX_READ_BYTES = 100_000;

/**
 * Runs one workspace tool. Every failure the model can act on (bad
 * arguments, a non-zero exit, a timeout, a path outside the workspace, a
 * sandbox the worker lacks) is a result; only cancellation throws, because
 * then nobody is waiting for one.
 */
export async function executeTool(name: string, rawArgs: unknown, ctx: ToolContext): Promise<ToolResult> {
  ctx.signal?.throwIfAborted();
  const parsed = parseToolCall(name, rawArgs);
  if (!parsed.ok) return { success: false, error: `invalid arguments: ${parsed.error}`, output: '' };
  const { invocation } = parsed;
  const started = Date.now();
  try {
    switch (invocation.name) {
      case 'shell':
        return await shell(invocation.args, ctx);
      case 'read_file':
        return { ...(await read(invocation.args.path, ctx)), durationMs: Date.now() - started };
      case 'write_file': {
        const { path: relative, content } = invocation.args;
        const file = await resolveInWorkspace(ctx.workspace, relative, offLimits(ctx));
        await writeFileAtomic(file, content, ctx.workspace);
        return { success: true, output: `wrote ${Buffer.byteLength(content)} bytes to ${relative}`, durationMs: Date.now() - started };
      }
      default:
        return { success: false, error: `tool ${invocation.name} does not run in the workspace`, output: '' };
    }
  } catch (err) {
    if (ctx.signal?.aborted) throw ctx.signal.reason ?? err;
    return { success: false, error: describeToolError(err, ctx.workspace), output: '', durationMs: Date.now() - started };
  }
}

/**
 * A failed file operation as the model should read it: Node's message once
 * (it already starts with the code), and paths relative to the workspace, the
 * way the model named them; the worker's own directories are not its business.
 */
export function describeToolError(err: unknown, workspace: string): string {
  if (err instanceof WorkspaceEscapeError) return err.message;
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  const message = err instanceof Error ? err.message : String(err);
  const withCode = message.startsWith(`${code}:`) ? message : `${code}: ${message}`;
  const root = workspace.replace(/\/+$/, '');
  return withCode.replaceAll(`'${root}/`, "'").replaceAll(`'${root}'`, "'.'");
}

async function shell(args: { command: string; timeoutMs?: number }, ctx: ToolContext): Promise<ToolResult> {
  const timeoutMs = Math.min(args.timeoutMs ?? ctx.timeoutMs, ctx.timeoutMs);
  const outcome = await runJailed({
    command: args.command,
    workspace: ctx.workspace,
    sandbox: ctx.sandbox ?? sandboxSchema.parse({}),
    timeoutMs,
    name: ctx.callId,
    workerEnv: ctx.env ?? process.env,
    host: ctx.host ?? (await sandboxHost()),
    signal: ctx.signal,
    maxOutputChars: MAX_OUTPUT_CHARS,
    onProgress: ctx.onProgress,
  });
  if (!outcome.ok) return { success: false, error: outcome.error, output: '' };
  if (outcome.aborted) throw ctx.signal?.reason ?? new Error('tool cancelled');
  const base: ToolResult = {
    success: true,
    exitCode: outcome.exitCode,
    durationMs: outcome.durationMs,
    output: outcome.output,
    ...(outcome.truncated ? { truncated: true, fullOutputPath: outcome.logPath } : {}),
    ...(outcome.warning ? { warnings: [outcome.warning] } : {}),
  };
  const limits = outcome.limitNote ? `; ${outcome.limitNote}` : '';
  if (outcome.timedOut)
    return { ...base, success: false, error: `command timed out after ${Math.round(timeoutMs / 100) / 10}s (process tree killed)${limits}` };
  // A command that ran into its sandbox's limits did not do what it meant to, whatever its exit code says.
  if (outcome.exitCode !== 0 || limits) return { ...base, success: false, error: `${describeExit(outcome)}${limits}` };
  return base;
}

/** What the shell's sandbox hides, as real paths: the file tools refuse it too. */
function offLimits(ctx: ToolContext): string[] {
  const env = ctx.env ?? process.env;
  return secretPaths(env, { tetherHome: tetherHome(env), home: env.HOME }).map((hidden) => hidden.path);
}

async function read(requested: string, ctx: ToolContext): Promise<ToolResult> {
  const file = await resolveInWorkspace(ctx.workspace, requested, offLimits(ctx));
  const read = await readBounded(file, requested, MAX_READ_BYTES, ctx.workspace);
  if (!read.ok) return { success: false, error: read.error, output: '' };
  return { success: true, output: read.text, ...(read.truncated ? { truncated: true } : {}) };
}
