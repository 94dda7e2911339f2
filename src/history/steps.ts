import type { ActivityRecord, ControlRecord, RunHistory } from './run-history.js';

/** What every entry of `tether history` has: when, how long, how many attempts and which errors. */
interface Timed {
  /** The run's step (from 1) the entry belongs to; 0 before the first model call. */
  step: number;
  execution: number;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  attempts: number;
  errors: string[];
  outcome: ActivityRecord['outcome'];
}

/** One entry of a run's story, built from its Temporal history. */
export type HistoryStep =
  | (Timed & {
      kind: 'model';
      model: string;
      text: string;
      toolCalls: string[];
      /** The question of the reply's `ask_user` call, which the run is blocked on until someone answers. */
      question?: string;
      inputTokens: number;
      outputTokens: number;
      costUsd: number;
    })
  | (Timed & { kind: 'tool'; tool: string; args: unknown; ok: boolean | null; output: string })
  | (Timed & { kind: 'verify'; attempt: number; command: string; passed: boolean | null; output: string })
  | (Timed & { kind: 'compaction'; messages: number; costUsd: number })
  | (Timed & { kind: 'other'; name: string; summary: string });

/** A control message as `tether history` lists it. */
export interface HistoryControl {
  step: number;
  execution: number;
  at: string;
  name: string;
  via: 'signal' | 'update';
  payload: unknown;
  identity: string | null;
  error: string | null;
}

const OUTPUT_SUMMARY = 120;

/** A line that states an error (`TypeError: …`, `Error: …`, `FAIL …`, `not ok …`), as test runners and runtimes print them. */
const ERROR_LINE = /^(?:\w*(?:Error|Exception)(?: \[[^\]]*\])?:|FAIL(?:ED)?\b|not ok\b|error\b)/i;

/**
 * One line of a tool's or a check's output, clipped: enough to recognise it.
 * The line that states the error when there is one (a stack trace starts with
 * where it was thrown, not what), else the first line with text.
 */
export function outputSummary(text: string | undefined | null): string {
  const lines = (text ?? '').split('\n').map((l) => l.trim());
  const line = lines.find((l) => ERROR_LINE.test(l)) ?? lines.find(Boolean) ?? '';
  return line.length > OUTPUT_SUMMARY ? `${line.slice(0, OUTPUT_SUMMARY - 1)}…` : line;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
/** A field deep inside a decoded payload, or undefined: inputs and results are read as found, never trusted to a type. */
function get(value: unknown, ...path: string[]): unknown {
  let at = value;
  for (const key of path) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined;
  return at;
}
const num = (value: unknown) => Number(value ?? 0) || 0;
const str = (value: unknown) => (value === undefined || value === null ? '' : String(value));

/** The run's activities as steps (model calls, tools, verification, compaction), in order, each with its step number. Pure. */
export function stepsOf(history: RunHistory): HistoryStep[] {
  let step = 0;
  return history.activities.map((a) => {
    const callStep = get(a.input, 'step');
    if (a.activityType === 'callModel' && typeof callStep === 'number') step = callStep + 1;
    return toStep(a, step);
  });
}

function toStep(a: ActivityRecord, step: number): HistoryStep {
  const timed: Timed = {
    step,
    execution: a.execution,
    startedAt: iso(a.startedAt ?? a.scheduledAt),
    endedAt: iso(a.endedAt),
    durationMs: a.endedAt !== null ? a.endedAt - (a.startedAt ?? a.scheduledAt) : null,
    attempts: a.attempts,
    errors: a.errors,
    outcome: a.outcome,
  };
  const { input, result } = a;
  switch (a.activityType) {
    case 'callModel': {
      const calls = get(result, 'toolCalls');
      const asked = Array.isArray(calls) ? calls.find((c) => get(c, 'name') === 'ask_user') : undefined;
      const question = asked === undefined ? undefined : get(asked, 'args', 'question');
      return {
        ...timed,
        kind: 'model',
        model: str(get(result, 'model') ?? get(input, 'model')),
        text: str(get(result, 'text')),
        toolCalls: Array.isArray(calls) ? calls.map((c) => str(get(c, 'name'))) : [],
        ...(typeof question === 'string' ? { question } : {}),
        inputTokens: num(get(result, 'usage', 'inputTokens')),
        outputTokens: num(get(result, 'usage', 'outputTokens')),
        costUsd: num(get(result, 'costUsd')),
      };
    }
    case 'runTool': {
      const ok = result === undefined ? null : Boolean(get(result, 'success'));
      const output = ok === false && get(result, 'error') ? str(get(result, 'error')) : str(get(result, 'output'));
      return {
        ...timed,
        kind: 'tool',
        tool: str(get(input, 'call', 'name')),
        args: get(input, 'call', 'args') ?? null,
        ok,
        output: outputSummary(output || a.errors.at(-1)),
      };
    }
    case 'runVerification': {
      const passed = result === undefined ? null : Boolean(get(result, 'passed'));
      return {
        ...timed,
        kind: 'verify',
        attempt: num(get(input, 'attempt')),
        command: str(get(input, 'command')),
        passed,
        output: outputSummary(str(get(result, 'output'))),
      };
    }
    case 'summarizeTranscript': {
      const transcript = get(input, 'transcript');
      return { ...timed, kind: 'compaction', messages: Array.isArray(transcript) ? transcript.length : 0, costUsd: num(get(result, 'costUsd')) };
    }
    default:
      return { ...timed, kind: 'other', name: a.activityType, summary: a.summary ?? a.activityType };
  }
}

/** The control messages, each with the step the run was at when it arrived. Pure. */
export function controlsOf(history: RunHistory, steps: HistoryStep[]): HistoryControl[] {
  return history.controls.map((c: ControlRecord) => {
    const before = steps.filter((s) => s.startedAt !== null && Date.parse(s.startedAt) <= c.at).at(-1);
    return {
      step: before?.step ?? 0,
      execution: c.execution,
      at: new Date(c.at).toISOString(),
      name: c.name,
      via: c.via,
      payload: c.payload,
      identity: c.identity,
      error: c.error ?? null,
    };
  });
}
