import { type CriticStatus, isTerminal, type RunState } from '../api/types.js';
import type { HistoryControl, HistoryStep } from '../history/steps.js';
import type { ExecutionRecord, RunHistory } from '../history/run-history.js';
import { duration, printTable, terminalText, usd } from './output.js';
import { oneLine } from './status-format.js';

/** `tether history --output json`: the run's steps, control messages and changes of state, every execution included. */
export function historyJson(history: RunHistory, steps: HistoryStep[], controls: HistoryControl[]) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    runId: history.runId,
    executions: history.executions.map((x) => ({ executionId: x.executionId, startedAt: iso(x.startedAt), endedAt: iso(x.endedAt), end: x.end })),
    steps,
    controls,
    states: history.states.map((s) => ({ at: iso(s.at), state: s.state })),
    cancelRequest: history.cancelRequest && { ...history.cancelRequest, at: iso(history.cancelRequest.at) },
  };
}

/**
 * The changes of the run's state while it went on (a stop, a pause for a
 * person, going on again): an emergency stop the run tripped on its own errors
 * is one, with no control message before it. Its ending has a line of its own.
 */
function stateChanges(history: RunHistory): Array<{ at: string; state: string }> {
  return history.states.filter((s) => !isTerminal(s.state as RunState)).map((s) => ({ at: new Date(s.at).toISOString(), state: s.state }));
}

/** Arguments as compact JSON, long strings clipped, so a call fits a line. */
export function compactArgs(args: unknown, max = 100): string {
  const clip = (value: unknown): unknown => {
    if (typeof value === 'string') return value.length > 40 ? `${value.slice(0, 39)}…` : value;
    if (Array.isArray(value)) return value.map(clip);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clip(v)]));
    return value;
  };
  const text = JSON.stringify(clip(args)) ?? '';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Why a call that ended without an answer failed (its last error): a failed model call otherwise reads as one that cost nothing. */
function failedWith(step: HistoryStep): string {
  if (step.outcome !== 'failed' && step.outcome !== 'timed_out') return '';
  const last = step.errors.at(-1);
  return ` → FAILED${last ? `: ${oneLine(last, 120)}` : ''}`;
}

function retries(step: HistoryStep): string {
  if (step.attempts <= 1) return '';
  return ` (${step.attempts} attempts${step.errors.length ? `; ${oneLine(step.errors[0]!, 60)}` : ''})`;
}

/** What one step did, in a line. */
export function describeStep(step: HistoryStep): string {
  const end = step.outcome === 'running' ? ' … running' : step.outcome === 'cancelled' ? ' → cancelled' : '';
  switch (step.kind) {
    case 'model': {
      const named = step.toolCalls.map((name) => (name === 'ask_user' && step.question ? `ask_user "${oneLine(step.question, 120)}"` : name));
      const calls = named.length ? ` → ${named.join(', ')}` : step.text ? ` → "${oneLine(step.text, 60)}"` : '';
      return `model ${step.model}: ${step.inputTokens} in / ${step.outputTokens} out tokens, ${usd(step.costUsd)}${calls}${retries(step)}${end}${failedWith(step)}`;
    }
    case 'tool': {
      // A call whose worker died says so itself (src/history/decode.ts): its outcome would read as a timeout.
      const unfinished = String(step.output).startsWith('interrupted:') ? ` → ${step.output}` : ` → ${step.outcome}: ${step.output}`;
      const result = step.ok === null ? end || unfinished : ` → ${step.ok ? 'ok' : 'FAILED'}${step.output ? `: ${step.output}` : ''}`;
      return `${step.tool} ${compactArgs(step.args)}${result}${retries(step)}`;
    }
    case 'verify': {
      const result = step.passed === null ? end : ` → ${step.passed ? 'passed' : 'FAILED'}${step.output ? `: ${step.output}` : ''}`;
      return `verify attempt ${step.attempt}: ${step.command}${result}${retries(step)}`;
    }
    case 'compaction':
      return `compaction of ${step.messages} messages, ${usd(step.costUsd)}${retries(step)}${end}`;
    default:
      return `${step.summary}${retries(step)}${end}`;
  }
}

/** The critic's report to its run (after each check): what it watches for and what it decided, not its JSON. */
function describeCriticReport(report: Partial<CriticStatus>): string {
  const next = report.nextEscalationAt ? `, next check ${report.nextEscalationAt.slice(11, 19)}` : ', no check due';
  const decided = report.decisions?.at(-1);
  return `critic (${report.policy ?? '?'})${next}${decided ? `; last decision: ${decided.decision}` : ''}`;
}

export function describeControl(c: HistoryControl): string {
  if (c.name === 'criticReport' && c.payload && typeof c.payload === 'object' && !c.error) return describeCriticReport(c.payload as Partial<CriticStatus>);
  const payload = c.payload && typeof c.payload === 'object' && Object.keys(c.payload).length ? ` ${compactArgs(c.payload)}` : '';
  const who = c.identity ? ` by ${c.identity}` : '';
  return `${c.name} (${c.via}${who})${payload}${c.error ? ` → refused: ${c.error}` : ''}`;
}

/** The run as a table: one row per step, control message and change of state, in time order, with a row where it continued as new. */
export function printHistory(history: RunHistory, steps: HistoryStep[], controls: HistoryControl[]): void {
  const time = (iso: string | null) => (iso ? iso.slice(11, 23) : '');
  const rows: Array<{ at: string; row: Record<string, string> }> = [
    ...steps.map((s) => ({
      at: s.startedAt ?? '',
      row: { step: s.step ? String(s.step) : '', start: time(s.startedAt), took: s.durationMs === null ? '' : duration(s.durationMs), what: describeStep(s) },
    })),
    ...controls.map((c) => ({ at: c.at, row: { step: '', start: time(c.at), took: '', what: describeControl(c) } })),
    ...stateChanges(history).map((c) => ({ at: c.at, row: { step: '', start: time(c.at), took: '', what: `state → ${c.state}` } })),
    ...history.executions.slice(1).map((x, i) => ({
      at: new Date(x.startedAt).toISOString(),
      row: {
        step: '',
        start: time(new Date(x.startedAt).toISOString()),
        took: '',
        what: `— continued as new: execution ${i + 2} of ${history.executions.length} —`,
      },
    })),
  ];
  rows.sort((a, b) => a.at.localeCompare(b.at));
  printTable(
    rows.map((r) => r.row),
    ['step', 'start', 'took', 'what'],
  );
  const last = history.executions.at(-1);
  if (last) process.stdout.write(`\n${terminalText(ending(runEnd(last), last.error))}\n`);
}

/** How the run ended, in its own terms: a failed execution's failure type is the run's state when it is one. */
function runEnd(execution: ExecutionRecord): string {
  const state = execution.failureType;
  return execution.end === 'failed' && state && isTerminal(state as RunState) ? state : execution.end;
}

function ending(end: string, error: string | undefined): string {
  if (end === 'running') return 'the run is still going (tether status shows it live)';
  return `ended: ${end}${error ? ` (${oneLine(error, 120)})` : ''}`;
}
