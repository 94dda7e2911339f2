import type { Command } from 'commander';
import type { ControlName } from '../../api/messages.js';
import type { RunStatus } from '../../api/types.js';
import { controlRun, getStatus, TetherError } from '../../client/runs.js';
import { fleetEmergency, listStoppedRuns } from '../../client/fleet.js';
import { printFields, printJson, printTable, age, type OutputFormat } from '../output.js';
import { statusFields, withClient } from './inspect.js';

function printStatus(status: RunStatus, format: OutputFormat): void {
  if (format === 'json') printJson(status);
  else printFields(statusFields(status));
}

/** One verb that sends one control message as an Update and prints the new status. */
function controlVerb(program: Command, verb: string, name: ControlName, description: string, configure: (cmd: Command) => Command, payload: (args: string[], opts: Record<string, string>) => unknown) {
  configure(program.command(verb).description(description))
    .option('--output <format>', 'text or json', 'text')
    .action(async (...received: unknown[]) => {
      const cmd = received[received.length - 1] as Command;
      const opts = cmd.opts() as Record<string, string>;
      const args = cmd.args;
      await withClient(opts.output, async (_tc, format) => {
        printStatus(await controlRun(_tc, args[0], name, payload(args.slice(1), opts)), format);
      });
    });
}

export function registerControlCommands(program: Command): void {
  controlVerb(program, 'steer', 'steer', 'inject a message before the next LLM call', (c) => c.argument('<id>').argument('<message...>'), (rest) => ({
    message: rest.join(' '),
  }));
  controlVerb(
    program,
    'extend',
    'extend',
    'push the deadline out and/or raise the step ceiling',
    (c) => c.argument('<id>').option('--by <duration>', 'e.g. 10m').option('--steps <n>', 'raise maxSteps by n'),
    (_rest, opts) => ({
      ...(opts.by !== undefined ? { by: opts.by } : {}),
      ...(opts.steps !== undefined ? { steps: Number(opts.steps) } : {}),
    }),
  );
  controlVerb(program, 'kill', 'kill', 'stop a run now: in-flight tools die, the run ends killed', (c) => c.argument('<id>').requiredOption('--reason <text>', 'why (recorded as the cause)'), (_rest, opts) => ({
    reason: opts.reason,
  }));
  controlVerb(program, 'approve', 'approve', 'resume a run paused at its budget ceiling', (c) => c.argument('<id>').requiredOption('--add-usd <usd>', 'budget to add'), (_rest, opts) => ({
    addBudgetUsd: Number(opts.addUsd),
  }));
  controlVerb(program, 'answer', 'answer', 'answer the question a blocked run asked', (c) => c.argument('<id>').argument('<text...>'), (rest) => ({ text: rest.join(' ') }));

  program
    .command('estop')
    .description('emergency stop: trip, clear or show, for one run or the whole fleet (--all)')
    .argument('<action>', 'trip | clear | status')
    .argument('[id]', 'run id (or --all)')
    .option('--all', 'every running run (fleet-wide)')
    .option('--reason <text>', 'why (for trip)')
    .option('--output <format>', 'text or json', 'text')
    .action((action: string, id: string | undefined, opts: { all?: boolean; reason?: string; output: string }) =>
      withClient(opts.output, async (tc, format) => {
        if (!['trip', 'clear', 'status'].includes(action)) throw new TetherError(`unknown estop action "${action}": use trip, clear or status`, 'invalid');
        if (action === 'status' && !id) {
          const runs = await listStoppedRuns(tc);
          if (format === 'json') return printJson({ runs });
          return printTable(runs.map((r) => ({ id: r.runId, state: r.state, errors: String(r.consecutiveErrors), model: r.model, age: age(r.startedAt) })), ['id', 'state', 'errors', 'model', 'age']);
        }
        if (opts.all) {
          if (action === 'status') throw new TetherError('estop status takes a run id, or no argument for the fleet', 'invalid');
          const outcome = await fleetEmergency(tc, action as 'trip' | 'clear', opts.reason);
          if (format === 'json') return printJson(outcome);
          process.stdout.write(`fleet ${action}: ${outcome.affected.length} run(s) ${action === 'trip' ? 'stopped' : 'cleared'}${outcome.failed.length ? `, ${outcome.failed.length} failed` : ''}\n`);
          for (const f of outcome.failed) process.stdout.write(`  ${f.runId}: ${f.error}\n`);
          return;
        }
        if (!id) throw new TetherError(`estop ${action} needs a run id, or --all`, 'invalid');
        if (action === 'status') {
          const status = await getStatus(tc, id);
          if (format === 'json') return printJson({ runId: id, emergency_stop: status.emergencyStop.active, consecutive_errors: status.consecutiveErrors, max_consecutive_errors: status.maxConsecutiveErrors, reason: status.emergencyStop.reason, since: status.emergencyStop.since });
          return printFields(statusFields(status));
        }
        if (action === 'trip' && !opts.reason) throw new TetherError('estop trip needs --reason', 'invalid');
        const status = action === 'trip' ? await controlRun(tc, id, 'emergencyStop', { reason: opts.reason }) : await controlRun(tc, id, 'clearEmergency', {});
        printStatus(status, format);
      }),
    );
}
