import { isTerminal, type RunState } from '../api/types.js';
import type { ActivityRecord, ExecutionRecord, RunHistory } from './run-history.js';
import { type HistoryStep, stepsOf } from './steps.js';

/**
 * A run as a timeline: spans of work (model calls, tools, verification,
 * compaction, critic decisions) and of waiting (pauses), with the executions
 * of its continued-as-new chain. Built from decoded history only, so it is
 * pure: `tether history --timeline` and the panel's waterfall draw the same
 * value.
 */

export type SpanKind = 'llm' | 'tool' | 'verify' | 'critic' | 'pause' | 'compaction';

/** One bar of the waterfall. Times are ISO 8601; `endedAt` is null while it lasts. */
export interface Span {
  kind: SpanKind;
  /** The run's step (from 1) it belongs to; 0 before the first model call. */
  step: number;
  /** What it was: the activity's summary, or for a pause why the run waited. */
  name: string;
  /** When it was scheduled (so retries and their back-off are inside the bar), or when the pause began. */
  startedAt: string;
  endedAt: string | null;
  /** Attempts made (ActivityTaskStarted's attempt); 1 for a pause. */
  attempts: number;
  /** The last error, from a retried attempt or the final failure. */
  error?: string;
  /** Every attempt's error, oldest first, when there were several. */
  errors?: string[];
  costUsd?: number;
  /** Model calls only. */
  tokens?: { input: number; output: number };
  /** How it ended: an activity's outcome (`failed` too for a tool that failed or a check that did not pass), or `resumed` / `paused` for a pause. */
  outcome: string;
  /** Index (0 = first) of the execution of the chain it happened in. */
  execution: number;
}

/** A point on the cost curve: totals after a step, model calls and compaction included. */
export interface CurvePoint {
  step: number;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
}

export interface Timeline {
  runId: string;
  spans: Span[];
  /**
   * The chain, oldest first; each but the last ended `continued_as_new` when the run went on. `end` is in
   * the run's words, as `tether status` says it (`killed`, `timeout`, `needs_fix` …), or `running`.
   */
  executions: Array<{ executionId: string; startedAt: string; endedAt: string | null; end: string }>;
  curve: CurvePoint[];
}

/** The states in which a run waits for someone (DESIGN.md), and what the timeline calls each wait. */
const PAUSES: Record<string, string> = {
  emergency_stopped: 'emergency stop',
  awaiting_approval: 'budget: waiting for approval',
  blocked: 'question: waiting for an answer',
  awaiting_tool_approval: 'tool approval: waiting for a decision',
};

const iso = (ms: number) => new Date(ms).toISOString();

/** The run's timeline; `critics` are the histories of its critic children, whose decisions become `critic` spans. Pure. */
export function timelineOf(history: RunHistory, critics: RunHistory[] = []): Timeline {
  const steps = stepsOf(history);
  const work = history.activities.flatMap((a, i) => {
    const span = workSpan(a, steps[i]!);
    return span ? [span] : [];
  });
  const delegated = delegateSpans(history, work);
  const spans = [...work, ...delegated, ...pauseSpans(history, work), ...criticSpans(critics, work)];
  spans.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  return {
    runId: history.runId,
    spans,
    executions: history.executions.map((x) => ({
      executionId: x.executionId,
      startedAt: iso(x.startedAt),
      endedAt: x.endedAt === null ? null : iso(x.endedAt),
      end: endInRunWords(x),
    })),
    curve: curveOf(steps, history.activities, delegated),
  };
}

const KINDS: Partial<Record<HistoryStep['kind'], SpanKind>> = { model: 'llm', tool: 'tool', verify: 'verify', compaction: 'compaction' };

/** An activity as a span; bookkeeping activities (workspace claims, checkpoints) are not drawn. */
function workSpan(a: ActivityRecord, step: HistoryStep): Span | null {
  const kind = KINDS[step.kind];
  if (!kind) return null;
  const span: Span = {
    kind,
    step: step.step,
    name: a.summary ?? fallbackName(step),
    startedAt: iso(a.scheduledAt),
    endedAt: a.endedAt === null ? null : iso(a.endedAt),
    attempts: Math.max(a.attempts, 1),
    outcome: a.outcome,
    execution: a.execution,
  };
  if (a.errors.length) span.error = a.errors.at(-1);
  if (a.errors.length > 1) span.errors = a.errors;
  // A tool that reported failure, or a check that did not pass, completed as an activity but failed as work.
  if ((step.kind === 'tool' && step.ok === false) || (step.kind === 'verify' && step.passed === false)) {
    span.outcome = 'failed';
    span.error = step.output || span.error || 'failed';
  }
  // Only a call that answered says what it cost: one still running, failed or cut short has no reply to read it from.
  if (a.outcome !== 'completed') return span;
  if (step.kind === 'model' || step.kind === 'compaction') span.costUsd = step.costUsd;
  if (step.kind === 'model') span.tokens = { input: step.inputTokens, output: step.outputTokens };
  return span;
}

function fallbackName(step: HistoryStep): string {
  if (step.kind === 'model') return `callModel ${step.model} step ${step.step}`;
  if (step.kind === 'tool') return step.tool;
  if (step.kind === 'verify') return `verify attempt ${step.attempt}: ${step.command}`;
  if (step.kind === 'compaction') return `compaction of ${step.messages} messages`;
  return step.name;
}

/** The step the run was at when `at` came: the last model call that began by then. */
function stepAt(work: Span[], at: string): number {
  return work.filter((s) => s.kind === 'llm' && s.startedAt <= at).at(-1)?.step ?? 0;
}

/**
 * Paused periods, from the run's `TetherState` search attribute: the workflow
 * upserts it whenever the state changes, so entering and leaving a paused
 * state are both in the history, in every execution.
 */
function pauseSpans(history: RunHistory, work: Span[]): Span[] {
  const spans: Span[] = [];
  let open: Span | null = null;
  for (const change of history.states) {
    const pause = PAUSES[change.state];
    if (open && open.name !== pause) {
      // A pause left for an ending (killed while it waited), or covered by another (an emergency stop while the
      // budget waited), ended that way; only a change to running resumed the run.
      const covered = pause !== undefined || isTerminal(change.state as RunState);
      Object.assign(open, { endedAt: iso(change.at), outcome: covered ? change.state : 'resumed' });
      open = null;
    }
    if (pause && !open) {
      const at = iso(change.at);
      open = { kind: 'pause', step: stepAt(work, at), name: pause, startedAt: at, endedAt: null, attempts: 1, outcome: 'paused', execution: change.execution };
      spans.push(open);
    }
  }
  const last = history.executions.at(-1);
  if (open && last?.endedAt != null) Object.assign(open, { endedAt: iso(last.endedAt), outcome: endInRunWords(last) });
  return spans;
}

type ChildRecord = RunHistory['children'][number];

/**
 * The run's `delegate` calls: each a `tool` span from its sub-agent's start to
 * the moment the run's call to it returned, with what the sub-agent spent: at
 * its end (its RunResult's cost), or at its emergency stop (the cost it
 * reported; it stays stopped for an operator while the run goes on). One that
 * ended other than completed failed, as the call's result says to the model.
 */
function delegateSpans(history: RunHistory, work: Span[]): Span[] {
  return history.children
    .filter((c) => c.workflowType === 'agentRun')
    .map((child): Span => {
      const startedAt = iso(child.at);
      const span: Span = {
        kind: 'tool',
        step: stepAt(work, startedAt),
        name: `delegate: sub-agent ${child.workflowId}`,
        startedAt,
        endedAt: null,
        attempts: 1,
        outcome: 'running',
        execution: child.execution,
      };
      return Object.assign(span, delegateEnd(child, history.executions[child.execution]));
    });
}

/** How a delegate call ended: its sub-agent's stop or end, else the end of the execution that ran it (which took the sub-agent with it). */
function delegateEnd(child: ChildRecord, execution: ExecutionRecord | undefined): Partial<Span> {
  if (child.stopped)
    return {
      endedAt: iso(child.stopped.at),
      outcome: 'failed',
      error: `the sub-agent tripped its emergency stop${child.stopped.reason ? `: ${child.stopped.reason}` : ''}`,
      costUsd: child.stopped.costUsd,
    };
  if (child.end !== null && child.endedAt !== null) {
    const result = child.result as { status?: unknown; cause?: unknown } | undefined;
    const ended = { endedAt: iso(child.endedAt), outcome: 'completed', ...reportedCost(child.result) };
    if (result?.status === 'completed') return ended;
    const status = typeof result?.status === 'string' ? result.status : child.end;
    const cause = typeof result?.cause === 'string' ? result.cause : child.error;
    return { ...ended, outcome: 'failed', error: `the sub-agent ended ${status}${cause ? `: ${cause}` : ''}` };
  }
  if (execution?.endedAt == null) return {};
  return { endedAt: iso(execution.endedAt), outcome: 'cancelled', error: `the run ended ${endInRunWords(execution)} while its sub-agent ran` };
}

/** The cost a sub-agent's RunResult or a critic's advice reports, when it is a number. */
function reportedCost(result: unknown): { costUsd?: number } {
  const cost = Number((result as { costUsd?: unknown } | undefined)?.costUsd);
  return Number.isFinite(cost) ? { costUsd: cost } : {};
}

/** How an execution ended, in the run's words: its state when the run ended it, and a terminate is a kill, as the lists say. */
function endInRunWords(x: ExecutionRecord): string {
  if (x.end === 'failed') return x.failureType && isTerminal(x.failureType as RunState) ? x.failureType : 'failed';
  if (x.end === 'terminated') return 'killed';
  if (x.end === 'timed_out') return 'timeout';
  return x.end;
}

/** The critic's decisions (its `criticDecide` model calls), from the critic children's histories. */
function criticSpans(critics: RunHistory[], work: Span[]): Span[] {
  return critics.flatMap((critic) =>
    critic.activities
      .filter((a) => a.activityType === 'criticDecide')
      .map((a): Span => {
        const startedAt = iso(a.scheduledAt);
        const span: Span = {
          kind: 'critic',
          step: stepAt(work, startedAt),
          name: a.summary ?? 'criticDecide',
          startedAt,
          endedAt: a.endedAt === null ? null : iso(a.endedAt),
          attempts: Math.max(a.attempts, 1),
          outcome: a.outcome,
          execution: 0,
          ...reportedCost(a.result),
        };
        const advice = a.result as { error?: unknown } | undefined;
        if (a.errors.length) span.error = a.errors.at(-1);
        // The activity answers a failed or unusable decision as a value (the critic then falls back): it is no decision.
        if (typeof advice?.error === 'string' && advice.error) Object.assign(span, { outcome: 'failed', error: advice.error });
        return span;
      }),
  );
}

/**
 * Cumulative cost and tokens after each step that has any: model calls and
 * compactions that answered, and the sub-agents that ended (what each spent
 * counts at the step that delegated to it, as the run counts it then).
 */
function curveOf(steps: HistoryStep[], activities: ActivityRecord[], delegated: Span[]): CurvePoint[] {
  const spent: Array<{ step: number; costUsd: number; inputTokens: number; outputTokens: number }> = [];
  for (const [i, s] of steps.entries()) {
    if ((s.kind !== 'model' && s.kind !== 'compaction') || activities[i]?.outcome !== 'completed') continue;
    spent.push({
      step: s.step,
      costUsd: s.costUsd,
      inputTokens: s.kind === 'model' ? s.inputTokens : 0,
      outputTokens: s.kind === 'model' ? s.outputTokens : 0,
    });
  }
  for (const d of delegated) if (d.endedAt !== null && d.costUsd) spent.push({ step: d.step, costUsd: d.costUsd, inputTokens: 0, outputTokens: 0 });
  spent.sort((a, b) => a.step - b.step);
  const points: CurvePoint[] = [];
  const total = { costUsd: 0, inputTokens: 0, outputTokens: 0 };
  for (const s of spent) {
    total.costUsd += s.costUsd;
    total.inputTokens += s.inputTokens;
    total.outputTokens += s.outputTokens;
    const point = { step: s.step, ...total, costUsd: Math.round(total.costUsd * 1e6) / 1e6 };
    if (points.at(-1)?.step === s.step) points[points.length - 1] = point;
    else points.push(point);
  }
  return points;
}

/** Each step's own cost (not cumulative), for a sparkline: the differences along the curve. */
export function costPerStep(curve: CurvePoint[]): number[] {
  return curve.map((p, i) => Math.max(0, p.costUsd - (curve[i - 1]?.costUsd ?? 0)));
}
