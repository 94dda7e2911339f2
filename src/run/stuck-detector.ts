/** One step as the detector sees it: what was called, how, and what came of it. */
export interface StepSignature {
  tool: string;
  args: string;
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

export interface StuckDetectorState {
  window: StepSignature[];
}

export const DEFAULT_STUCK_CONFIG: StuckConfig = { window: 10, repeatThreshold: 4, pingPongCycles: 3, sameErrorThreshold: 5 };

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Masks what changes between otherwise identical failures: numbers, hex ids, timestamps. */
function normaliseError(text: string): string {
  return (text.split('\n', 1)[0] ?? '')
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z?/g, '<time>')
    .replace(/\b[0-9a-f]{8,}\b/gi, '<id>')
    .replace(/\d+/g, '<n>')
    .trim()
    .slice(0, 200);
}

/** A short deterministic hash (FNV-1a) so outputs can be compared without storing them. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16);
}

/** The signature of a tool call and its result. Different outputs make different signatures. */
export function signatureOf(tool: string, args: unknown, result: { success: boolean; output: string; error?: string }): StepSignature {
  const normalisedArgs = stableJson(args).replace(/\s+/g, ' ');
  // A generic error ("exited with 1") is told apart by the first line the command printed.
  const error = `${normaliseError(result.error ?? '')} | ${normaliseError(result.output)}`;
  const outcome = result.success ? `ok:${hash(result.output)}` : `error:${error}:${hash(result.output)}`;
  return { tool, args: normalisedArgs, outcome };
}

const key = (s: StepSignature) => `${s.tool} ${s.args} → ${s.outcome}`;
const show = (s: StepSignature) => `${s.tool} ${s.args.length > 120 ? `${s.args.slice(0, 120)}…` : s.args}`;

/**
 * Recognises an agent going round in circles over its last steps: the same
 * call with the same outcome again and again, a ping-pong between two or three
 * calls, or the same error whatever it tries. Pure: feed it signatures.
 */
export class StuckDetector {
  private readonly config: StuckConfig;
  private window: StepSignature[];

  constructor(config: Partial<StuckConfig> = {}, state?: StuckDetectorState) {
    this.config = { ...DEFAULT_STUCK_CONFIG, ...config };
    this.window = state ? [...state.window] : [];
  }

  record(signature: StepSignature): StuckVerdict {
    this.window.push(signature);
    if (this.window.length > this.config.window) this.window.shift();
    return this.repeat() ?? this.cycle(2) ?? this.cycle(3) ?? this.sameError() ?? { stuck: false };
  }

  reset(): void {
    this.window = [];
  }

  snapshot(): StuckDetectorState {
    return { window: [...this.window] };
  }

  private repeat(): StuckVerdict | null {
    const n = this.config.repeatThreshold;
    const last = this.window.slice(-n);
    if (last.length < n || !last.every((s) => key(s) === key(last[0]))) return null;
    return { stuck: true, kind: 'repeat', pattern: `${show(last[0])} → ${last[0].outcome.split(':')[0]} repeated ${n} times` };
  }

  private cycle(length: number): StuckVerdict | null {
    const span = length * this.config.pingPongCycles;
    const last = this.window.slice(-span);
    if (last.length < span) return null;
    const unit = last.slice(0, length).map(key);
    if (new Set(unit).size !== length) return null;
    if (!last.every((s, i) => key(s) === unit[i % length])) return null;
    const names = last.slice(0, length).map(show);
    return { stuck: true, kind: 'ping_pong', pattern: `${[...names, names[0]].join(' → ')} … ${this.config.pingPongCycles} cycles` };
  }

  private sameError(): StuckVerdict | null {
    const counts = new Map<string, number>();
    for (const s of this.window) {
      if (!s.outcome.startsWith('error:')) continue;
      const error = s.outcome.slice(0, s.outcome.lastIndexOf(':'));
      counts.set(error, (counts.get(error) ?? 0) + 1);
    }
    for (const [error, count] of counts) {
      if (count >= this.config.sameErrorThreshold) return { stuck: true, kind: 'same_error', pattern: `the same error ${count} times in the last ${this.window.length} steps: ${error.slice(6)}` };
    }
    return null;
  }
}

/** The steer a model gets on first detection: it shows the pattern and asks for a change of approach. */
export function diagnosticMessage(verdict: StuckVerdict): string {
  if (!verdict.stuck) return '';
  return [
    `You appear to be stuck in a loop (${verdict.kind.replace('_', '-')}): ${verdict.pattern}.`,
    'Repeating it will not give a different result. Stop, re-read the last results, state what you now believe the problem is, and try a different approach.',
    'If the loop continues the run will be stopped as stuck.',
  ].join('\n');
}
