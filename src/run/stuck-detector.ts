/**
 * Stuck-loop detection (reference 001): a sliding window over the last steps'
 * signatures recognises an agent going round in circles — the same call with
 * the same outcome again and again, a ping-pong between two or three calls, or
 * the same error whatever it tries. Pure and deterministic, so the workflow can
 * run it and carry its window across continue-as-new.
 */

/** One step as the detector sees it: what was called, how, and what came of it. */
export interface StepSignature {
  tool: string;
  /** The arguments as JSON with sorted keys and collapsed whitespace. */
  args: string;
  /** `ok:<hash>` or `error:<masked first line>:<hash>`, the hash over the (masked) output. */
  outcome: string;
}

export interface StuckConfig {
  /** How many recent steps are kept. */
  window: number;
  /** The same call with the same outcome this many times in a row. */
  repeatThreshold: number;
  /** Full cycles of an A→B (or A→B→C) pattern. */
  pingPongCycles: number;
  /** The same error this many times within the window, whatever the call. */
  sameErrorThreshold: number;
}

export type StuckVerdict = { stuck: false } | { stuck: true; kind: 'repeat' | 'ping_pong' | 'same_error'; pattern: string };

/** Plain JSON form of the detector, carried across continue-as-new. */
export interface StuckDetectorState {
  window: StepSignature[];
}

export const DEFAULT_STUCK_CONFIG: StuckConfig = { window: 10, repeatThreshold: 4, pingPongCycles: 3, sameErrorThreshold: 5 };

/** Cycle lengths checked for ping-pong: A→B and A→B→C. */
const CYCLE_LENGTHS = [2, 3] as const;

/** JSON with sorted keys and collapsed whitespace in strings, so equal calls print equal. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (typeof value === 'string') return JSON.stringify(value.replace(/\s+/g, ' ').trim());
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Masks what differs between runs of the same command: timestamps, clock times, durations, ids. */
function maskVolatile(text: string): string {
  return (
    text
      .replace(/\d{4}-\d\d-\d\d[T ][\d:.]+(Z|[+-]\d\d:?\d\d)?/g, '<time>')
      .replace(/\b\d\d?:\d\d:\d\d(\.\d+)?\b/g, '<time>')
      .replace(/\b\d+(\.\d+)?\s?(ms|s)\b/g, '<duration>')
      .replace(/\b0x[0-9a-f]+\b/gi, '<id>')
      // At least one digit, so long words made of a–f stay words.
      .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, '<id>')
  );
}

/** An error's identity: its first non-empty line with every number masked too, so "line 12" and "line 13" match. */
function errorLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  return maskVolatile(line).replace(/\d+/g, '<n>').replace(/\s+/g, ' ').trim().slice(0, 200);
}

/** A short deterministic hash (FNV-1a, 32 bits) so outputs compare without being stored. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** Arguments as the signature keeps them: long ones (a file's content) by prefix, length and hash, so the window stays small in the run's carried state. */
function argsKey(args: unknown): string {
  const json = stableJson(args);
  return json.length <= 500 ? json : `${json.slice(0, 200)}…(${json.length} chars, #${hash(json)})`;
}

/** The signature of one tool call and its result. Different outputs make different signatures. */
export function signatureOf(tool: string, args: unknown, result: { success: boolean; output: string; error?: string }): StepSignature {
  const outputHash = hash(maskVolatile(result.output));
  if (result.success) return { tool, args: argsKey(args), outcome: `ok:${outputHash}` };
  // A generic error ("command exited with 1") is told apart by the first line the command printed.
  const error = [errorLine(result.error ?? ''), errorLine(result.output)].filter(Boolean).join(' | ');
  return { tool, args: argsKey(args), outcome: `error:${error}:${outputHash}` };
}

const key = (s: StepSignature) => `${s.tool} ${s.args} ${s.outcome}`;
/** The outcome without its hash: `ok` or `error:<line>`. */
const outcomeLabel = (outcome: string) => (outcome.startsWith('error:') ? outcome.slice(0, outcome.lastIndexOf(':')) : 'ok');
const showCall = (s: StepSignature) => `${s.tool} ${s.args.length > 120 ? `${s.args.slice(0, 120)}…` : s.args}`;

/** Watches the last steps for a loop. Feed it one signature per tool call; it answers with a verdict. */
export class StuckDetector {
  private readonly config: StuckConfig;
  private window: StepSignature[];

  constructor(config: Partial<StuckConfig> = {}, state?: StuckDetectorState) {
    this.config = { ...DEFAULT_STUCK_CONFIG, ...config };
    this.window = state ? state.window.slice(-this.config.window) : [];
  }

  /** Adds a step and says whether the window now shows a loop. */
  record(signature: StepSignature): StuckVerdict {
    this.window.push(signature);
    if (this.window.length > this.config.window) this.window.shift();
    return this.repeat() ?? CYCLE_LENGTHS.map((n) => this.cycle(n)).find(Boolean) ?? this.sameError() ?? { stuck: false };
  }

  /** Forgets the window: after a diagnostic steer the model gets a fresh start. */
  reset(): void {
    this.window = [];
  }

  snapshot(): StuckDetectorState {
    return { window: this.window.map((s) => ({ ...s })) };
  }

  private repeat(): StuckVerdict | null {
    const n = this.config.repeatThreshold;
    const last = this.window.slice(-n);
    if (last.length < n || !last.every((s) => key(s) === key(last[0]))) return null;
    return { stuck: true, kind: 'repeat', pattern: `${showCall(last[0])} → ${outcomeLabel(last[0].outcome)} repeated ${n} times` };
  }

  private cycle(length: number): StuckVerdict | null {
    const span = length * this.config.pingPongCycles;
    const last = this.window.slice(-span);
    if (last.length < span) return null;
    const unit = last.slice(0, length).map(key);
    // A unit with a repeated step is a repeat or a longer cycle, not this one.
    if (new Set(unit).size !== length) return null;
    if (!last.every((s, i) => key(s) === unit[i % length])) return null;
    const calls = last.slice(0, length).map(showCall);
    return { stuck: true, kind: 'ping_pong', pattern: `${[...calls, calls[0]].join(' → ')} → … ${this.config.pingPongCycles} cycles with the same results` };
  }

  private sameError(): StuckVerdict | null {
    const counts = new Map<string, number>();
    for (const s of this.window) {
      if (!s.outcome.startsWith('error:')) continue;
      const error = outcomeLabel(s.outcome);
      const count = (counts.get(error) ?? 0) + 1;
      counts.set(error, count);
      if (count >= this.config.sameErrorThreshold) {
        return {
          stuck: true,
          kind: 'same_error',
          pattern: `the same error ${count} times in the last ${this.window.length} steps: ${error.slice('error:'.length)}`,
        };
      }
    }
    return null;
  }
}

const KIND_TEXT: Record<Extract<StuckVerdict, { stuck: true }>['kind'], string> = {
  repeat: 'you made the same call and got the same result each time',
  ping_pong: 'you are alternating between the same calls and getting the same results',
  same_error: 'you keep hitting the same error whatever you try',
};

/** The steer a model gets on first detection: it shows the pattern and asks for a change of approach. */
export function diagnosticMessage(verdict: Extract<StuckVerdict, { stuck: true }>): string {
  return [
    `You appear to be stuck in a loop: ${KIND_TEXT[verdict.kind]}.`,
    `Pattern: ${verdict.pattern}.`,
    'Repeating it will not give a different result. Stop, re-read the last results, say what you now believe the problem is, and take a different approach.',
    'If the loop continues the run will be stopped as stuck.',
  ].join('\n');
}
