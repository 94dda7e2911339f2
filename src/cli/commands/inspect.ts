import type { Command } from 'commander';
import { TetherError } from '../../client/errors.js';
import type { ListFilter } from '../../client/list-query.js';
import type { TetherClient } from '../../client/runs.js';
import { withClient } from '../client.js';
import { age, note, notingSlowAnswer, type OutputFormat, printJson, printTable, usd, verb } from '../output.js';
import { oneLine, printStatus } from '../status-format.js';
import { decimal } from '../decimal.js';

/** status, list and history. */
export function registerInspectCommands(program: Command): void {
  verb(program, 'status', "show a run's live status, including its safety state")
    .argument('<id>', 'run id')
    .action((id: string, opts: { output: string }) =>
      withClient(async (tc, _opts, format) => {
        const status = await statusOf(tc, id);
        printStatus(status, format);
        if (format === 'text') await printCostSparkline(tc, id, status.step);
      })(opts),
    );
  registerListCommand(program);
  registerHistoryCommand(program);
}

/** The status of a run, open or closed (src/client/run-status.ts). */
async function statusOf(tc: TetherClient, id: string) {
  const { readRunStatus } = await import('../../client/run-status.js');
  return (await notingSlowAnswer(id, readRunStatus(tc, id))).status;
}

/**
 * A one-line sparkline of the cost of each step, read from the run's history
 * (the status holds totals only): only its end, read backwards, enough for the
 * line's last steps, so a long run costs no more than a short one. A history
 * that cannot be read costs the line, never the status.
 */
async function printCostSparkline(tc: TetherClient, id: string, steps: number): Promise<void> {
  const { readLastModelCalls } = await import('../../history/fetch.js');
  const { readRunHistory } = await import('../../history/run-history.js');
  const { costPerStep, timelineOf } = await import('../../history/timeline.js');
  const { sparkline } = await import('../sparkline.js');
  const chain = await readLastModelCalls(tc.client, id, SPARK_WIDTH + 1).catch(() => null);
  if (!chain) return;
  const costs = costPerStep(timelineOf(readRunHistory(id, chain)).curve);
  if (!costs.length) return;
  const shown = Math.min(costs.length, SPARK_WIDTH);
  const total = Math.max(costs.length, steps);
  const range = shown < total ? `last ${shown} of ${total} steps` : `${total} steps`;
  process.stdout.write(`cost/step:  ${sparkline(costs, SPARK_WIDTH)}  (${range}, max ${usd(Math.max(...costs))})\n`);
}

const SPARK_WIDTH = 60;

interface ListOptions {
  state?: string;
  estop?: boolean;
  limit: string;
  output: string;
}

function registerListCommand(program: Command): void {
  verb(program, 'list', 'list runs, newest first')
    .option('--state <state>', 'only runs in this state (e.g. running, emergency_stopped, killed)')
    .option('--estop', 'only runs whose emergency stop is active')
    .option('--limit <n>', 'at most this many rows', '100')
    .action(
      withClient<ListOptions, ListFilter>(
        async (tc, _opts, format, filter) => {
          const { listRuns } = await import('../../client/list.js');
          const runs = await listRuns(tc, filter);
          if (format === 'json') return printJson({ runs });
          printTable(
            runs.map((r) => ({
              id: r.runId,
              state: r.state,
              steps: String(r.steps),
              cost: usd(r.costUsd),
              model: r.model,
              estop: r.emergencyStop ? 'STOP' : '',
              age: age(r.startedAt),
              goal: oneLine(r.goal, 60),
            })),
            ['id', 'state', 'steps', 'cost', 'model', 'estop', 'age', 'goal'],
          );
        },
        { prepare: listFilterOf },
      ),
    );
}

/** The filter the flags ask for: a state Tether knows, and a whole number of rows. */
async function listFilterOf(opts: ListOptions): Promise<ListFilter> {
  const limit = decimal(opts.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new TetherError(`invalid --limit "${opts.limit}": expected a whole number of rows, 1 or more`, 'invalid');
  const filter: ListFilter = { state: opts.state, emergencyStop: opts.estop ? true : undefined, limit };
  const { listQuery } = await import('../../client/list-query.js');
  listQuery(filter);
  return filter;
}

function registerHistoryCommand(program: Command): void {
  verb(
    program,
    'history',
    'what a run did, step by step, from its Temporal history (every execution): model calls with tokens and cost, tool calls with arguments and output, verification, control messages, durations and retries; --events for the raw events',
  )
    .argument('<id>', 'run id')
    .option('--events', 'the raw Temporal events instead of the steps')
    .option('--timeline', 'the run as a waterfall: model calls, tools, verification, critic decisions and pauses with their durations, attempts and errors')
    .option('--audit', 'who sent each control message, when and why (the last 200)')
    .action((id: string, opts: HistoryOptions) =>
      withClient(
        async (tc, _opts, format) => {
          if (opts.audit) return printAudit(tc, id, format);
          if (opts.events) return printEvents(tc, id, format);
          if (opts.timeline) return printRunTimeline(tc, id, format);
          return printSteps(tc, id, format);
        },
        { prepare: oneHistoryView },
      )(opts),
    );
}

interface HistoryOptions {
  events?: boolean;
  timeline?: boolean;
  audit?: boolean;
  output: string;
}

/** The steps, or one other view of the history: two asked at once is a usage error, not a silent choice. */
function oneHistoryView(opts: HistoryOptions): undefined {
  const views = (['events', 'timeline', 'audit'] as const).filter((view) => opts[view]).map((view) => `--${view}`);
  if (views.length > 1) throw new TetherError(`history shows one view at a time: pick one of ${views.join(', ')}`, 'invalid');
}

/** Refuses an id that is not a run (a critic, the fleet flag) before its history is read as one: `not_found`, as status says. */
async function mustBeRun(tc: TetherClient, id: string): Promise<void> {
  const { describeRun } = await import('../../client/run-status.js');
  await describeRun(tc, id);
}

async function printRunTimeline(tc: TetherClient, id: string, format: OutputFormat): Promise<void> {
  const { readTimeline } = await import('../../history/read-timeline.js');
  const { printTimeline } = await import('../timeline-view.js');
  const { toTetherError } = await import('../../client/runs.js');
  await mustBeRun(tc, id);
  const timeline = await readTimeline(tc.client, id).catch((err: unknown) => {
    throw toTetherError(err, id);
  });
  if (format === 'json') return printJson(timeline);
  printTimeline(timeline);
}

/** The run's audit trail, as the run keeps it; for a closed run no worker replayed (terminated, with none running), rebuilt from its history. */
async function printAudit(tc: TetherClient, id: string, format: OutputFormat): Promise<void> {
  const { readRunStatus } = await import('../../client/run-status.js');
  const { status, closedExecution } = await readRunStatus(tc, id);
  const fromHistory = !status.audit && closedExecution !== null;
  const audit = status.audit ?? (fromHistory ? await auditInHistory(tc, id) : []);
  if (format === 'json') return printJson({ runId: id, audit, source: fromHistory ? 'history' : 'run' });
  if (fromHistory) note("read from the run's control messages in its history (no worker replayed it): entries the run made itself are not listed");
  if (!audit.length) {
    process.stdout.write(`no control messages yet for ${id}\n`);
    return;
  }
  printTable(
    audit.map((e) => ({ at: e.at, action: e.action, by: e.by, via: e.via ?? '', detail: oneLine(e.detail ?? '') })),
    ['at', 'action', 'by', 'via', 'detail'],
  );
}

async function auditInHistory(tc: TetherClient, id: string) {
  const { readChain } = await import('../../history/fetch.js');
  const { readRunHistory } = await import('../../history/run-history.js');
  const { auditFromHistory } = await import('../../history/audit.js');
  const { toTetherError } = await import('../../client/runs.js');
  const chain = await readChain(tc.client, id).catch((err: unknown) => {
    throw toTetherError(err, id);
  });
  return auditFromHistory(readRunHistory(id, chain));
}

async function printSteps(tc: TetherClient, id: string, format: OutputFormat): Promise<void> {
  const { readChain } = await import('../../history/fetch.js');
  const { readRunHistory } = await import('../../history/run-history.js');
  const { controlsOf, stepsOf } = await import('../../history/steps.js');
  const { historyJson, printHistory } = await import('../history-view.js');
  const { toTetherError } = await import('../../client/runs.js');
  await mustBeRun(tc, id);
  const chain = await readChain(tc.client, id).catch((err: unknown) => {
    throw toTetherError(err, id);
  });
  const history = readRunHistory(id, chain);
  const steps = stepsOf(history);
  const controls = controlsOf(history, steps);
  if (format === 'json') return printJson(historyJson(history, steps, controls));
  printHistory(history, steps, controls);
}

async function printEvents(tc: TetherClient, id: string, format: OutputFormat): Promise<void> {
  const { fetchChain } = await import('../../history/fetch.js');
  const { describeEvent } = await import('../history-format.js');
  const { toTetherError } = await import('../../client/runs.js');
  const chain = await fetchChain(tc.client, id).catch((err: unknown) => {
    throw toTetherError(err, id);
  });
  const events = chain.flatMap((x, execution) => x.events.map((e) => ({ execution: execution + 1, ...describeEvent(e) })));
  if (format === 'json') return printJson({ runId: id, executions: chain.map((x) => x.executionId), events });
  printTable(
    events.map((e) => ({ exec: String(e.execution), id: String(e.id), time: e.time.slice(11, 23), event: e.type, details: e.details })),
    ['exec', 'id', 'time', 'event', 'details'],
  );
}
