/**
 * The scripted model's script format: which reply (or fault) answers each step
 * of a conversation. Scripts are data, so the demo, tests and benchmarks can
 * stage an agent's behaviour, including a misbehaving provider, without code.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

// Ways the scripted provider can fail one attempt; `slow` and `trickle` delay the reply, they are not errors.
const FAULT_KINDS = ['429', 'quota', '500', '503', '400', '401', 'overflow', 'hang', 'reset', 'cut', 'malformed', 'slow', 'trickle'] as const;

const toolCallSchema = z
  .strictObject({
    name: z.string().min(1),
    args: z.record(z.string(), z.unknown()).optional(),
    rawArguments: z.string().optional(),
  })
  .refine((call) => call.args === undefined || call.rawArguments === undefined, { message: 'give either args or rawArguments, not both' });

const replySchema = z.strictObject({
  text: z.string().optional(),
  toolCalls: z.array(toolCallSchema).optional(),
  usage: z.strictObject({ prompt: z.int().nonnegative(), completion: z.int().nonnegative() }).optional(),
});

const faultSchema = z
  .strictObject({
    kind: z.enum(FAULT_KINDS),
    retryAfterSec: z.number().nonnegative().optional(),
    ms: z.int().nonnegative().optional(),
    times: z.int().positive().default(1),
    /** The error's message instead of the usual one (an HTTP error fault only): e.g. a provider quoting a key. */
    message: z.string().optional(),
  })
  .refine((fault) => (fault.kind !== 'slow' && fault.kind !== 'trickle') || fault.ms !== undefined, {
    message: 'a slow or trickle fault needs ms',
    path: ['ms'],
  });

const stepSchema = z.strictObject({
  reply: replySchema.default({}),
  faults: z.array(faultSchema).default([]),
  repeat: z.int().positive().default(1),
  delayMs: z.int().nonnegative().default(0),
});

/** The zod schema of a script file (see scenarios/ for examples). */
export const scriptSchema = z.strictObject({
  description: z.string().optional(),
  steps: z.array(stepSchema),
  after: replySchema.optional(),
  /** How summarisation requests (`x-tether-purpose: compaction`) are answered; faults are consumed per attempt. */
  compaction: z.strictObject({ reply: replySchema.optional(), faults: z.array(faultSchema).default([]) }).optional(),
});

/** A script as written: optional fields may be left out. */
export type Script = z.input<typeof scriptSchema>;
/** A validated script with its defaults filled in. */
export type LoadedScript = z.output<typeof scriptSchema>;
/** One step's reply as written in the script. */
export type ScriptReply = z.output<typeof replySchema>;
/** One entry of a step's `faults`. */
export type ScriptFault = z.output<typeof faultSchema>;
/** One step of a loaded script. */
export type ScriptStep = z.output<typeof stepSchema>;

/** A script that cannot be read or does not match the format; the message names the source and the field. */
export class ScriptError extends Error {
  override name = 'ScriptError';
}

/** Validates a script from any source; `source` names it in error messages. */
export function parseScript(raw: unknown, source: string): LoadedScript {
  const parsed = scriptSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.length ? formatPath(issue.path) : '(root)'}: ${issue.message}`);
  throw new ScriptError(`invalid script ${source}: ${problems.join('; ')}`);
}

/** Reads and validates a script file. */
export function loadScript(path: string): LoadedScript {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ScriptError(`cannot read script ${path}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ScriptError(`invalid script ${path}: not JSON: ${(err as Error).message}`);
  }
  return parseScript(raw, path);
}

// Script names become file names: nothing that could climb out of the scripts folder.
const SCRIPT_NAME = /^\w[\w.-]*$/;

/** Scripts by name: in-memory ones first, then `<dir>/<name>.json`, re-read when the file changes; `get` throws ScriptError for a broken file. */
export function createScriptCatalog(dir: string, inMemory: Record<string, Script>) {
  const fixed = new Map(Object.entries(inMemory).map(([name, script]) => [name, parseScript(script, `"${name}" (in memory)`)]));
  const cache = new Map<string, { mtimeMs: number; size: number; script: LoadedScript }>();
  return {
    get(name: string): LoadedScript | null {
      const own = fixed.get(name);
      if (own) return own;
      if (!SCRIPT_NAME.test(name)) return null;
      const path = join(dir, `${name}.json`);
      const stat = statSync(path, { throwIfNoEntry: false });
      if (!stat?.isFile()) return null;
      const hit = cache.get(name);
      if (hit && hit.mtimeMs === stat.mtimeMs && hit.size === stat.size) return hit.script;
      const script = loadScript(path);
      cache.set(name, { mtimeMs: stat.mtimeMs, size: stat.size, script });
      return script;
    },
    list(): string[] {
      let files: string[] = [];
      try {
        files = readdirSync(dir).filter((f) => f.endsWith('.json') && SCRIPT_NAME.test(f));
      } catch {
        // No scripts folder: only the in-memory scripts exist.
      }
      return [...new Set([...fixed.keys(), ...files.map((f) => f.slice(0, -'.json'.length))])].sort();
    },
  };
}

function formatPath(path: PropertyKey[]): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i ? '.' : ''}${String(key)}`)).join('');
}

const DEFAULT_AFTER: ScriptReply = { text: 'All steps done.' };

// Where each step's run of indices ends, so a step with a large `repeat` costs one entry, not N.
const stepEnds = new WeakMap<LoadedScript, number[]>();

/** The step answering step index `index`, or null when the script has run out (then `afterReply` answers). */
export function stepAt(script: LoadedScript, index: number): ScriptStep | null {
  let ends = stepEnds.get(script);
  if (!ends) {
    let end = 0;
    ends = script.steps.map((step) => (end += step.repeat));
    stepEnds.set(script, ends);
  }
  let lo = 0;
  let hi = ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ends[mid] > index) hi = mid;
    else lo = mid + 1;
  }
  return lo < ends.length ? script.steps[lo] : null;
}

/** The reply for any step index past the end of the script. */
export function afterReply(script: LoadedScript): ScriptReply {
  return script.after ?? DEFAULT_AFTER;
}

/** The fault for 1-based `attempt` of a step, honouring `times`; null once the faults are used up. */
export function faultFor(faults: ScriptFault[], attempt: number): ScriptFault | null {
  let seen = 0;
  for (const fault of faults) {
    seen += fault.times;
    if (attempt <= seen) return fault;
  }
  return null;
}

/** A reply ready for the wire: templates filled in, tool arguments as the exact string to send. */
export interface RenderedReply {
  text: string;
  toolCalls: { name: string; arguments: string }[];
  usage?: { prompt: number; completion: number };
}

/** Fills `{{step}}` and `{{run}}` into the reply's text, tool arguments and raw arguments. */
export function renderReply(reply: ScriptReply, vars: { step: number; run: string }): RenderedReply {
  const fill = (s: string) => (s.includes('{{') ? s.replaceAll('{{step}}', String(vars.step)).replaceAll('{{run}}', vars.run) : s);
  const fillDeep = (value: unknown): unknown => {
    if (typeof value === 'string') return fill(value);
    if (Array.isArray(value)) return value.map(fillDeep);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillDeep(v)]));
    return value;
  };
  return {
    text: fill(reply.text ?? ''),
    toolCalls: (reply.toolCalls ?? []).map((call) => ({
      name: call.name,
      arguments: call.rawArguments !== undefined ? fill(call.rawArguments) : JSON.stringify(fillDeep(call.args ?? {})),
    })),
    ...(reply.usage ? { usage: reply.usage } : {}),
  };
}
