import { z } from 'zod';
import { duration } from './duration.js';
import { describeBytes, jsonBytes, MAX_CONTEXT_CHARS, MAX_SPEC_BYTES } from './payload-limits.js';
import { REFUSED_PAYLOAD } from './payload-refusal.js';

const DAY = 86_400_000;

/** An enum whose error names what it was given (cut short) and every value it takes: `tools.1: tool "teleport" is not one of shell, …`. */
function oneOf<const T extends readonly [string, ...string[]]>(values: T, what: string) {
  return z.enum(values, {
    error: (issue) =>
      issue.input === undefined ? `${what} is required: one of ${values.join(', ')}` : `${what} ${shortJson(issue.input)} is not one of ${values.join(', ')}`,
  });
}

function shortJson(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Providers a model string may name: `provider:name`. */
export const PROVIDERS = ['openai', 'anthropic', 'ollama', 'scripted'] as const;
export type Provider = (typeof PROVIDERS)[number];

const MODEL_REF = /^(openai|anthropic|ollama|scripted):\S+$/;
/**
 * A refinement, not `.regex()`: zod's regex check resets the pattern's
 * `lastIndex` on every parse, which throws once the workflow sandbox has
 * frozen the schema (src/workflows/shared-libraries.ts); `test` on a pattern
 * without the g or y flag writes nothing. The pattern stays in the JSON Schema.
 */
export const modelRef = z
  .string()
  // The model is a search attribute (TetherModel), which Temporal caps at 2 KB: a longer one would be refused by the server, not here.
  .max(200, 'model may be at most 200 characters')
  .refine((value) => MODEL_REF.test(value), {
    message: 'model must be provider:name with provider one of openai, anthropic, ollama, scripted (e.g. openai:gpt-4.1-mini)',
  })
  .meta({ pattern: MODEL_REF.source });

/** Tool names are part of the public contract. */
export const TOOL_NAMES = ['shell', 'read_file', 'write_file', 'finish', 'ask_user', 'delegate'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];
export const DEFAULT_TOOLS: ToolName[] = ['shell', 'read_file', 'write_file', 'finish'];

export const CRITIC_POLICIES = ['extend-once', 'llm', 'off'] as const;
export type CriticPolicy = (typeof CRITIC_POLICIES)[number];

export const limitsSchema = z.strictObject({
  maxSteps: z.number().int().min(1).max(1_000_000).default(50),
  /** Absent means: the critic's backstop (softTimeout × backstopMultiplier) or 30m when the critic is off. */
  maxRuntime: duration({ min: 1_000, max: 365 * DAY }).optional(),
  maxConsecutiveErrors: z.number().int().min(1).max(1_000).default(5),
  budgetUsd: z.number().positive().max(1_000_000).optional(),
  toolTimeout: duration({ min: 100, max: DAY }).default(120_000),
  maxPause: duration({ min: 1_000, max: 365 * DAY }).default(7 * DAY),
  /** Tether extension: the per-attempt limit of one LLM call (a hung provider is cut and retried). */
  llmTimeout: duration({ min: 500, max: DAY }).default(300_000),
  /** Tether extension: transcript size (characters) past which older turns are summarised. */
  /** At most MAX_CONTEXT_CHARS: the transcript travels whole in payloads (continue-as-new, a resend), which Temporal caps at 2 MB. */
  maxContextChars: z.number().int().min(2_000).max(MAX_CONTEXT_CHARS).default(400_000),
  /** Tether extension: history length (events) at which the run continues as new. */
  maxHistoryEvents: z.number().int().min(200).max(50_000).default(10_000),
});

export const verifySchema = z.strictObject({
  command: z.string().trim().min(1, 'verify.command must not be empty').max(100_000),
  maxAttempts: z.number().int().min(1).max(100).default(3),
});

export const criticSchema = z.strictObject({
  policy: oneOf(CRITIC_POLICIES, 'critic policy').default('extend-once'),
  softTimeout: duration({ min: 100, max: 30 * DAY }).default(120_000),
  backstopMultiplier: z.number().min(1).max(1_000).default(3),
  /** The model the `llm` policy asks; defaults to the run's model. */
  model: modelRef.optional(),
});

export const SANDBOX_MODES = ['bwrap', 'off'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/**
 * How the run's shell and verification commands are confined (docs/security-tools.md).
 * Containment (own PID namespace, no network, resource limits) holds in every mode
 * the worker can provide; `bwrap` adds the read-only filesystem view.
 */
export const sandboxSchema = z.strictObject({
  /** Absent: bwrap where the worker can run it, containment only where it cannot. Explicit `bwrap` refuses to run without it. */
  mode: oneOf(SANDBOX_MODES, 'sandbox mode').optional(),
  /** Share the worker's network, loopback included (so its local services too). */
  network: z.boolean().default(false),
  /** Memory of one call's whole process tree, in MiB. */
  memoryMb: z.number().int().min(32).max(1_048_576).default(2_048),
  /** Processes (and threads) one call may have at once. */
  maxProcesses: z.number().int().min(8).max(100_000).default(512),
});
export type SandboxSpec = z.output<typeof sandboxSchema>;

/** Whether a string compiles as a JavaScript regular expression; the compiler's complaint when it does not. */
function regexProblem(source: string): string | null {
  try {
    new RegExp(source);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * One approval rule: calls of `tool` need a person's decision before they run;
 * with `match`, only the calls whose arguments (as compact JSON) match that
 * regular expression (docs/tool-approval.md).
 */
export const approvalRuleSchema = z.strictObject({
  tool: oneOf(TOOL_NAMES, 'tool'),
  match: z
    .string()
    .min(1, 'match must not be empty (leave it out to gate every call of the tool)')
    .max(10_000)
    .superRefine((source, ctx) => {
      const problem = regexProblem(source);
      if (problem) ctx.addIssue({ code: 'custom', message: `match is not a valid regular expression: ${problem}` });
    })
    .optional(),
});
export type ApprovalRule = z.output<typeof approvalRuleSchema>;

/** The input of one agent run. Validated in the client and again in the workflow. */
export const runSpecSchema = z.strictObject({
  goal: z.string().trim().min(1, 'goal must not be empty').max(200_000),
  model: modelRef,
  fallbackModels: z.array(modelRef).max(10).default([]),
  tools: z
    .array(oneOf(TOOL_NAMES, 'tool'))
    .default(DEFAULT_TOOLS)
    .transform((tools) => [...new Set<ToolName>([...tools, 'finish'])]),
  workspace: z.string().min(1).max(4_096).optional(),
  system: z.string().max(200_000).optional(),
  limits: limitsSchema.default(() => limitsSchema.parse({})),
  verify: verifySchema.optional(),
  critic: criticSchema.default(() => criticSchema.parse({})),
  sandbox: sandboxSchema.default(() => sandboxSchema.parse({})),
  approvals: z.array(approvalRuleSchema).max(100).default([]),
});

/** What a caller writes (durations as strings, defaults omitted). */
export type RunSpecInput = z.input<typeof runSpecSchema>;
/** A validated spec: durations in milliseconds, every default filled in. */
export type RunSpec = z.output<typeof runSpecSchema>;

export { REFUSED_PAYLOAD };

/** Formats zod issues as one line per problem, with the field path; a refused payload gives only its reason. */
export function describeIssues(error: z.ZodError): string {
  const refused = error.issues.flatMap((issue) => (issue.code === 'unrecognized_keys' ? issue.keys : [])).find((key) => key.includes(REFUSED_PAYLOAD));
  if (refused) return refused;
  return error.issues
    .map((issue) => {
      const path = issue.path.join('.');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/** A RunSpec that failed validation; the message lists every problem. */
export class InvalidRunSpecError extends Error {
  constructor(readonly issues: string) {
    super(`invalid RunSpec: ${issues}`);
    this.name = 'InvalidRunSpecError';
  }
}

/**
 * Why a valid spec is still too big to run, or null. A spec travels whole in
 * every start, continue-as-new and sub-agent, so it must leave room under
 * Temporal's payload limit for the run's own state.
 */
export function specSizeProblem(spec: RunSpec): string | null {
  const bytes = jsonBytes(spec);
  if (bytes <= MAX_SPEC_BYTES) return null;
  return `the RunSpec is ${describeBytes(bytes)} as JSON; at most ${describeBytes(MAX_SPEC_BYTES)} fits Temporal's payload limit with the run's state (shorten goal or system, or put long material in a workspace file)`;
}

/** Validates a RunSpec, throwing InvalidRunSpecError with every problem listed. */
export function parseRunSpec(input: unknown): RunSpec {
  const result = runSpecSchema.safeParse(input);
  if (!result.success) throw new InvalidRunSpecError(describeIssues(result.error));
  const tooBig = specSizeProblem(result.data);
  if (tooBig) throw new InvalidRunSpecError(tooBig);
  return result.data;
}
