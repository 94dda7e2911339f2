import { z } from 'zod';
import { modelRef, TOOL_NAMES, type ToolName } from './spec.js';

/**
 * The tool contract: each tool's arguments, whether re-running it is safe,
 * and where it runs. Part of the public API (DESIGN.md names the tools and
 * their arguments), and pure (zod only), so the workflow admits tool calls
 * with it and the activities run them with the same schemas.
 */

const relPath = z.string().min(1, 'path must not be empty').max(4_096);

const ARGS = {
  shell: z.strictObject({
    command: z.string().min(1, 'command must not be empty').max(100_000),
    timeoutMs: z.number().int().positive().max(86_400_000).optional(),
  }),
  read_file: z.strictObject({ path: relPath }),
  // At most 200 000 characters in one call: a model reply's arguments must fit a Temporal payload (src/api/payload-limits.ts).
  write_file: z.strictObject({ path: relPath, content: z.string().max(200_000, 'content may be at most 200000 characters; write a large file in parts') }),
  finish: z.strictObject({ summary: z.string().max(20_000) }),
  ask_user: z.strictObject({ question: z.string().min(1).max(10_000) }),
  delegate: z.strictObject({
    goal: z.string().min(1).max(100_000),
    model: modelRef.optional(),
    tools: z.array(z.enum(TOOL_NAMES)).optional(),
  }),
} satisfies Record<ToolName, z.ZodType>;

/** The validated arguments of one tool. */
export type ToolArgs<N extends ToolName> = z.output<(typeof ARGS)[N]>;

/** A tool call whose arguments passed their schema: narrowing on `name` types `args`. */
export type ToolInvocation = { [N in ToolName]: { name: N; args: ToolArgs<N> } }[ToolName];

/** A contract tool: its arguments, whether re-running it is safe, and where it runs. */
export interface ToolDefinition {
  name: ToolName;
  description: string;
  args: z.ZodType;
  /** Safe to run again after a crash without asking the model. */
  idempotent: boolean;
  /** `workflow` tools change the run itself (finish, ask a person, start a sub-agent). */
  where: 'activity' | 'workflow';
  /**
   * What a call does in the workspace: `reads` or `writes` its files and
   * nothing else; `runs` something that may change anything in it (a command,
   * a sub-agent); `none` leaves it alone.
   */
  workspace: 'reads' | 'writes' | 'runs' | 'none';
}

export const TOOLS: Record<ToolName, ToolDefinition> = {
  shell: {
    name: 'shell',
    description:
      'Run a shell command (bash) in the workspace. Returns combined stdout and stderr and the exit code; long output is truncated with the full text saved in the workspace. Commands are killed at their timeout.',
    args: ARGS.shell,
    idempotent: false,
    where: 'activity',
    workspace: 'runs',
  },
  read_file: {
    name: 'read_file',
    description: 'Read a text file in the workspace. The path is relative to the workspace.',
    args: ARGS.read_file,
    idempotent: true,
    where: 'activity',
    workspace: 'reads',
  },
  write_file: {
    name: 'write_file',
    description: 'Write (create or replace) a text file in the workspace, creating parent directories. The path is relative to the workspace.',
    args: ARGS.write_file,
    idempotent: true,
    where: 'activity',
    workspace: 'writes',
  },
  finish: {
    name: 'finish',
    description: 'Declare the goal done, with a short summary of what was done. A verification command may run first.',
    args: ARGS.finish,
    idempotent: true,
    where: 'workflow',
    workspace: 'none',
  },
  ask_user: {
    name: 'ask_user',
    description: 'Ask the person overseeing this run a question and wait for the answer. Use only when you cannot proceed without it.',
    args: ARGS.ask_user,
    idempotent: true,
    where: 'workflow',
    workspace: 'none',
  },
  delegate: {
    name: 'delegate',
    description: 'Hand a self-contained sub-task to a sub-agent that works in the same workspace; returns its outcome and summary.',
    args: ARGS.delegate,
    idempotent: false,
    where: 'workflow',
    workspace: 'runs',
  },
};

/**
 * The tools that only read or write the workspace's files, and are safe to run
 * again after a crash: a run may run them as a local activity, on the worker
 * holding its workflow task, when that worker holds the workspace.
 */
export const FILE_ONLY_TOOLS: ReadonlySet<string> = toolsWhere((t) => t.workspace === 'reads' || t.workspace === 'writes');

/** Tools whose calls may change the workspace: a checkpoint of it follows each (a sub-agent works in its parent's workspace). */
export const FILE_CHANGING_TOOLS: ReadonlySet<string> = toolsWhere((t) => t.workspace === 'writes' || t.workspace === 'runs');

function toolsWhere(test: (tool: ToolDefinition) => boolean): ReadonlySet<string> {
  return new Set(
    Object.values(TOOLS)
      .filter(test)
      .map((t) => t.name),
  );
}

/** The contract tool of that name; undefined for any other string (a model may call anything). */
export function toolDefinition(name: string): ToolDefinition | undefined {
  return Object.hasOwn(TOOLS, name) ? TOOLS[name as ToolName] : undefined;
}

/** Validates a tool call's arguments; the error lists every problem for the model to read. */
export function parseToolArgs<N extends ToolName>(name: N, args: unknown): { ok: true; args: ToolArgs<N> } | { ok: false; error: string } {
  const parsed = ARGS[name].safeParse(args ?? {});
  if (parsed.success) return { ok: true, args: parsed.data as ToolArgs<N> };
  const problems = parsed.error.issues.map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');
  return { ok: false, error: `${name}: ${problems}` };
}

/** Checks a call against the contract: a known tool with valid arguments becomes a typed invocation. */
export function parseToolCall(name: string, args: unknown): { ok: true; invocation: ToolInvocation } | { ok: false; error: string } {
  const definition = toolDefinition(name);
  if (!definition) return { ok: false, error: `unknown tool "${name}"` };
  const parsed = parseToolArgs(definition.name, args);
  if (!parsed.ok) return parsed;
  // parseToolArgs checked `args` against the schema of exactly this name, which is what pairs them in the union.
  return { ok: true, invocation: { name: definition.name, args: parsed.args } as ToolInvocation };
}

/** A tool's JSON schema is fixed: converted from zod once a process, not on every model call (it was ~2 % of a loaded worker's main thread). */
const jsonSchemas = new Map<ToolName, { description: string; parameters: Record<string, unknown> }>();

/** JSON schemas of the tools, as offered to the model. */
export function toolJsonSchemas(names: ToolName[]): Record<string, { description: string; parameters: Record<string, unknown> }> {
  return Object.fromEntries(
    names.map((name) => {
      let schema = jsonSchemas.get(name);
      if (!schema) {
        const { $schema: _ignored, ...parameters } = z.toJSONSchema(TOOLS[name].args) as Record<string, unknown>;
        schema = { description: TOOLS[name].description, parameters };
        jsonSchemas.set(name, schema);
      }
      return [name, schema];
    }),
  );
}

/**
 * How the error of a call that never ran begins: refused by a person, or
 * before it started (a paused run, arguments that do not parse). Such a call
 * changed nothing, which a fork relies on.
 */
export const NOT_RUN = { denied: 'denied: a person refused this call', refused: 'not run: ' } as const;
