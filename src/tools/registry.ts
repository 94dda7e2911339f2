import { z } from 'zod';
import { TOOL_NAMES, type ToolName } from '../api/spec.js';

// Imported by workflow code: zod and ../api only, no node: modules.

/** A contract tool: its arguments, whether re-running it is safe, and where it runs. */
export interface ToolDefinition {
  name: ToolName;
  description: string;
  args: z.ZodType;
  /** Safe to run again after a crash without asking the model. */
  idempotent: boolean;
  /** `workflow` tools change the run itself (finish, ask a person, start a sub-agent). */
  where: 'activity' | 'workflow';
}

const relPath = z.string().min(1, 'path must not be empty').max(4_096);

export const TOOLS: Record<ToolName, ToolDefinition> = {
  shell: {
    name: 'shell',
    description:
      'Run a shell command (bash) in the workspace. Returns combined stdout and stderr and the exit code; long output is truncated with the full text saved in the workspace. Commands are killed at their timeout.',
    args: z.strictObject({ command: z.string().min(1, 'command must not be empty').max(100_000), timeoutMs: z.number().int().positive().max(86_400_000).optional() }),
    idempotent: false,
    where: 'activity',
  },
  read_file: {
    name: 'read_file',
    description: 'Read a text file in the workspace. The path is relative to the workspace.',
    args: z.strictObject({ path: relPath }),
    idempotent: true,
    where: 'activity',
  },
  write_file: {
    name: 'write_file',
    description: 'Write (create or replace) a text file in the workspace, creating parent directories. The path is relative to the workspace.',
    args: z.strictObject({ path: relPath, content: z.string().max(10_000_000) }),
    idempotent: true,
    where: 'activity',
  },
  finish: {
    name: 'finish',
    description: 'Declare the goal done, with a short summary of what was done. A verification command may run first.',
    args: z.strictObject({ summary: z.string().max(20_000) }),
    idempotent: true,
    where: 'workflow',
  },
  ask_user: {
    name: 'ask_user',
    description: 'Ask the person overseeing this run a question and wait for the answer. Use only when you cannot proceed without it.',
    args: z.strictObject({ question: z.string().min(1).max(10_000) }),
    idempotent: true,
    where: 'workflow',
  },
  delegate: {
    name: 'delegate',
    description: 'Hand a self-contained sub-task to a sub-agent that works in the same workspace; returns its outcome and summary.',
    args: z.strictObject({
      goal: z.string().min(1).max(100_000),
      model: z.string().regex(/^(openai|anthropic|ollama|scripted):\S+$/, 'model must be provider:name').optional(),
      tools: z.array(z.enum(TOOL_NAMES)).optional(),
    }),
    idempotent: false,
    where: 'workflow',
  },
};

export function toolDefinition(name: ToolName): ToolDefinition | undefined {
  return Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
}

/** Validates a tool call's arguments; the error lists every problem for the model to read. */
export function parseToolArgs(name: ToolName, args: unknown): { ok: true; args: unknown } | { ok: false; error: string } {
  const definition = toolDefinition(name);
  if (!definition) return { ok: false, error: `unknown tool "${name}"` };
  const parsed = definition.args.safeParse(args ?? {});
  if (parsed.success) return { ok: true, args: parsed.data };
  const problems = parsed.error.issues.map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');
  return { ok: false, error: `${name}: ${problems}` };
}

/** JSON schemas of the tools, as offered to the model. */
export function toolJsonSchemas(names: ToolName[]): Record<string, { description: string; parameters: Record<string, unknown> }> {
  return Object.fromEntries(
    names.map((name) => {
      const { $schema: _ignored, ...parameters } = z.toJSONSchema(TOOLS[name].args) as Record<string, unknown>;
      return [name, { description: TOOLS[name].description, parameters }];
    }),
  );
}
