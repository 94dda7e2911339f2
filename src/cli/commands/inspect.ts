import type { Command } from 'commander';
import type { RunStatus } from '../../api/types.js';
import { listRuns } from '../../client/list.js';
import { connectTether, getStatus, toTetherError, type TetherClient } from '../../client/runs.js';
import { age, parseFormat, printFields, printJson, printTable, reportError, usd, type OutputFormat } from '../output.js';
import { describeEvent } from '../history-format.js';

/** Runs a command body with a connected client and the chosen output format. */
export async function withClient(output: string, body: (tc: TetherClient, format: OutputFormat) => Promise<void>): Promise<void> {
  let format: OutputFormat = 'text';
  try {
    format = parseFormat(output);
    const tc = await connectTether();
    try {
      await body(tc, format);
    } finally {
      await tc.close();
    }
  } catch (err) {
    process.exitCode = reportError(err, format);
  }
}

export function statusFields(s: RunStatus): Array<[string, string]> {
  const fields: Array<[string, string]> = [
    ['run', s.runId],
    ['state', s.state],
    ['model', s.model],
    ['step', `${s.step} / ${s.maxSteps}`],
    ['deadline', s.deadline],
    ['errors', `${s.consecutiveErrors} / ${s.maxConsecutiveErrors} consecutive`],
    ['emergency stop', s.emergencyStop.active ? `ACTIVE since ${s.emergencyStop.since}: ${s.emergencyStop.reason}` : 'off'],
    ['cost', `${usd(s.costUsd)}${s.budgetUsd !== null ? ` of ${usd(s.budgetUsd)}` : ''}`],
    ['tokens', `${s.usage.inputTokens} in / ${s.usage.outputTokens} out`],
    ['last tool', s.lastTool ?? '-'],
    ['last activity', `${s.lastActivityAt} (${age(s.lastActivityAt)} ago)`],
  ];
  if (s.question) fields.push(['question', s.question]);
  if (s.critic) {
    fields.push(['critic', `${s.critic.policy}, soft timeout ${Math.round(s.critic.softTimeoutMs / 1000)}s, next escalation ${s.critic.nextEscalationAt ?? '-'}, ${s.critic.decisions.length} decision(s)`]);
  }
  if (s.warnings.length) fields.push(['warnings', s.warnings.join('; ')]);
  if (s.cause) fields.push(['cause', s.cause]);
  return fields;
}

export function registerInspectCommands(program: Command): void {
  program
    .command('status')
    .description("show a run's live status, including its safety state")
    .argument('<id>', 'run id')
    .option('--output <format>', 'text or json', 'text')
    .action((id: string, opts: { output: string }) =>
      withClient(opts.output, async (tc, format) => {
        const status = await getStatus(tc, id);
        if (format === 'json') printJson(status);
        else printFields(statusFields(status));
      }),
    );

  program
    .command('list')
    .description('list runs, newest first')
    .option('--state <state>', 'only runs in this state (e.g. running, emergency_stopped, killed)')
    .option('--estop', 'only runs whose emergency stop is active')
    .option('--limit <n>', 'at most this many rows', '100')
    .option('--output <format>', 'text or json', 'text')
    .action((opts: { state?: string; estop?: boolean; limit: string; output: string }) =>
      withClient(opts.output, async (tc, format) => {
        const runs = await listRuns(tc, { state: opts.state, emergencyStop: opts.estop ? true : undefined, limit: Number(opts.limit) || 100 });
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
          })),
          ['id', 'state', 'steps', 'cost', 'model', 'estop', 'age'],
        );
      }),
    );

  program
    .command('history')
    .description("print a run's Temporal history (what it did, step by step)")
    .argument('<id>', 'run id')
    .option('--output <format>', 'text or json', 'text')
    .action((id: string, opts: { output: string }) =>
      withClient(opts.output, async (tc, format) => {
        let history;
        try {
          history = await tc.client.workflow.getHandle(id).fetchHistory();
        } catch (err) {
          throw toTetherError(err, id);
        }
        const events = (history.events ?? []).map(describeEvent);
        if (format === 'json') return printJson({ runId: id, events });
        printTable(
          events.map((e) => ({ id: String(e.id), time: e.time.slice(11, 23), event: e.type, details: e.details })),
          ['id', 'time', 'event', 'details'],
        );
      }),
    );
}
