import { setTimeout as sleep } from 'node:timers/promises';
import { Argument, type Command } from 'commander';
import type { ControlName } from '../../api/control.js';
import type { RunStatus } from '../../api/types.js';
import type { TetherClient } from '../../client/runs.js';
import { TetherError } from '../../client/errors.js';
import { checkControlSecrets } from '../../client/run-start-check.js';
import { cliAudit, withAs } from '../actor.js';
import { withClient } from '../client.js';
import { confirmation, killedLine } from '../confirmations.js';
import { messageText } from '../control-input.js';
import { age, notingSlowAnswer, type OutputFormat, printFields, printJson, printTable, required, verb } from '../output.js';
import { printStatus, statusFields } from '../status-format.js';
import { registerDecideCommand } from './decide.js';
import { decimal } from '../decimal.js';

type Options = Record<string, string | undefined> & { output: string };

/** A verb that sends one control message (of its own name) to one run. */
interface ControlVerb {
  name: ControlName;
  description: string;
  configure: (cmd: Command) => Command;
  payload: (args: string[], opts: Options) => unknown;
}

const number = (flag: string, value: string | undefined) => {
  const n = decimal(value);
  if (value === undefined || !Number.isFinite(n)) throw new TetherError(`invalid ${flag} "${value}": expected a number`, 'invalid');
  return n;
};

const CONTROL_VERBS: ControlVerb[] = [
  {
    name: 'steer',
    description: 'queue a message the model reads before its next call (the message as arguments, "-" for stdin, or --file)',
    configure: (c) => c.argument('<id>').argument('[message...]').option('--file <path>', 'read the message from a file'),
    payload: (rest, opts) => ({ message: messageText(rest, opts.file, 'steer message') }),
  },
  {
    name: 'extend',
    description: 'push the deadline out and/or raise the step ceiling',
    configure: (c) => c.argument('<id>').option('--by <duration>', 'e.g. 10m').option('--steps <n>', 'raise maxSteps by n'),
    payload: (_rest, opts) => ({
      ...(opts.by !== undefined ? { by: opts.by } : {}),
      ...(opts.steps !== undefined ? { steps: number('--steps', opts.steps) } : {}),
    }),
  },
  {
    name: 'kill',
    description: 'stop a run now: in-flight tools die, the run ends killed; waits for the end',
    configure: (c) => required(c.argument('<id>'), '--reason <text>', 'why, recorded as the cause'),
    payload: (_rest, opts) => ({ reason: opts.reason }),
  },
  {
    name: 'approve',
    description: 'resume a run paused at its budget ceiling',
    configure: (c) => required(c.argument('<id>'), '--add-usd <usd>', 'budget to add'),
    payload: (_rest, opts) => ({ addBudgetUsd: number('--add-usd', opts.addUsd) }),
  },
  {
    name: 'answer',
    description: 'answer the question a blocked run asked (the text as arguments, "-" for stdin, or --file)',
    configure: (c) => c.argument('<id>').argument('[text...]').option('--file <path>', 'read the answer from a file'),
    payload: (rest, opts) => ({ text: messageText(rest, opts.file, 'answer') }),
  },
];

/** steer, extend, kill, approve, answer, decide and estop. */
export function registerControlCommands(program: Command): void {
  for (const control of CONTROL_VERBS) registerControlVerb(program, control);
  registerDecideCommand(program);
  withAs(verb(program, 'estop', 'emergency stop: trip or clear it for one run or the whole fleet (--all); status lists the stopped runs or one run'))
    .addArgument(new Argument('<action>', 'what to do').choices(['trip', 'clear', 'status']))
    .argument('[id]', 'run id (or --all); status without one lists the stopped runs')
    .option('--all', 'every running run (fleet-wide)')
    .option('--reason <text>', `why, recorded as the stop's reason (trip; default "${HAND_TRIP_REASON}", or "fleet emergency stop" with --all)`)
    .action((act: Estop['action'], id: string | undefined, opts: EstopOptions) =>
      withClient((tc, _o, format, target: EstopTarget) => estop(tc, format, target, opts), { prepare: () => estopTarget({ action: act, id, opts }) })(opts),
    );
}

/** Sends the verb's control message as an Update; prints one confirmation line, or the new status as JSON. */
function registerControlVerb(program: Command, { name, description, configure, payload }: ControlVerb): void {
  withAs(configure(verb(program, name, description))).action(async (...received: unknown[]) => {
    const cmd = received[received.length - 1] as Command;
    const opts = cmd.opts() as Options;
    const [id, ...rest] = cmd.args;
    const prepare = async () => {
      const { validControl } = await import('../control-input-schema.js');
      return validControl(name, { ...(payload(rest.flat(), opts) as object), audit: cliAudit(opts.as) });
    };
    await withClient<Options, unknown>(
      async (tc, _o, format, message) => {
        const { controlRun } = await import('../../client/runs.js');
        const status = await whileSaying(interruptedNote(name, id!), () => notingSlowAnswer(id!, controlRun(tc, id!, name, message)));
        if (format === 'json') return printJson(status);
        if (name === 'kill') return reportKill(tc, status);
        process.stdout.write(`${confirmation(name, status)}\n`);
      },
      { prepare },
    )(opts);
  });
}

/** What a Ctrl-C while a control message waits for its answer leaves behind: a message that may still apply. */
function interruptedNote(name: string, id: string): string {
  return (
    `stopped waiting for run ${id} to answer the ${name} message. The server may hold it until a worker takes the run, and then it applies: ` +
    `\`tether history ${id} --audit\` shows whether it did; sending it again could apply it twice`
  );
}

/** Runs `work`; a Ctrl-C or SIGTERM meanwhile says `note` and exits 130, as an interrupted command does. */
async function whileSaying<T>(note: string, work: () => Promise<T>): Promise<T> {
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`${signal}: ${note}\n`);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work();
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

const KILL_WAIT_MS = 30_000;

/** A kill takes effect once in-flight work is cancelled; say how the run ended, or that it is still ending. */
async function reportKill(tc: TetherClient, status: RunStatus): Promise<void> {
  const { waitForResult } = await import('../../client/run-result.js');
  const result = await Promise.race([waitForResult(tc, status.runId), sleep(KILL_WAIT_MS, null, { ref: false })]);
  process.stdout.write(`${result ? killedLine(result) : confirmation('kill', status)}\n`);
}

interface EstopOptions {
  all?: boolean;
  reason?: string;
  as?: string;
  output: string;
}

interface Estop {
  action: 'trip' | 'clear' | 'status';
  id: string | undefined;
  opts: EstopOptions;
}

/** The cause a run stopped by hand without --reason records, as a fleet stop records "fleet emergency stop". */
const HAND_TRIP_REASON = 'emergency stop by hand';

/** What an estop command acts on: the list of stopped runs, the fleet, or one run. */
type EstopTarget = { kind: 'stopped-runs' } | { kind: 'fleet'; action: 'trip' | 'clear' } | { kind: 'run'; action: Estop['action']; id: string };

/** The target the combination of action, id, --all and --reason means, or a usage error. */
async function estopTarget({ action, id, opts }: Estop): Promise<EstopTarget> {
  // Checked before anything is sent, as every verb checks its input: a blank --reason is refused as the run would refuse it.
  checkControlSecrets('estop', { reason: opts.reason, audit: cliAudit(opts.as) });
  if (action === 'trip' && opts.reason !== undefined) {
    const { validControl } = await import('../control-input-schema.js');
    validControl('emergencyStop', { reason: opts.reason });
  }
  if (action === 'status' && !id) return { kind: 'stopped-runs' };
  if (action === 'status' && opts.all) throw new TetherError('estop status takes a run id or --all, not both', 'invalid');
  if (opts.all) {
    if (id) throw new TetherError(`estop ${action} takes a run id or --all, not both`, 'invalid');
    return { kind: 'fleet', action: action as 'trip' | 'clear' };
  }
  if (!id) throw new TetherError(`estop ${action} needs a run id, or --all`, 'invalid');
  return { kind: 'run', action, id };
}

async function estop(tc: TetherClient, format: OutputFormat, target: EstopTarget, opts: EstopOptions): Promise<void> {
  if (target.kind === 'stopped-runs') return printStoppedRuns(tc, format);
  if (target.kind === 'fleet') return fleetEstop(tc, format, target.action, opts.reason, opts.as);
  const { action, id } = target;
  if (action === 'status') {
    // As `tether status` reads it: a closed run from its memo and history, with no worker to replay it.
    const { readRunStatus } = await import('../../client/run-status.js');
    return printEstopStatus((await readRunStatus(tc, id)).status, format);
  }
  const { controlRun } = await import('../../client/runs.js');
  const name = action === 'trip' ? 'emergencyStop' : 'clearEmergency';
  const audit = cliAudit(opts.as);
  const status = await controlRun(tc, id, name, action === 'trip' ? { reason: opts.reason || HAND_TRIP_REASON, audit } : { audit });
  if (format === 'json') printStatus(status, format);
  else process.stdout.write(`${confirmation(name, status)}\n`);
}

async function printStoppedRuns(tc: TetherClient, format: OutputFormat): Promise<void> {
  const { listStoppedRuns } = await import('../../client/fleet.js');
  const { fleetState } = await import('../../client/runs.js');
  const [fleet, runs] = await Promise.all([fleetState(tc), listStoppedRuns(tc)]);
  if (format === 'json') return printJson({ fleet, runs });
  if (fleet.active) process.stdout.write(`fleet: stopped since ${fleet.since} (${fleet.reason}); tether estop clear --all resumes it\n`);
  printTable(
    runs.map((r) => ({ id: r.runId, state: r.state, errors: String(r.consecutiveErrors), model: r.model, age: age(r.startedAt) })),
    ['id', 'state', 'errors', 'model', 'age'],
  );
}

async function fleetEstop(tc: TetherClient, format: OutputFormat, action: 'trip' | 'clear', reason: string | undefined, as: string | undefined): Promise<void> {
  const { fleetEmergency } = await import('../../client/fleet.js');
  const outcome = await fleetEmergency(tc, action, reason, cliAudit(as));
  // A run that refused is a run the fleet stop did not reach: a script that checks the exit code must not read it as safe.
  if (outcome.failed.length) process.exitCode = 1;
  if (format === 'json') return printJson(outcome);
  const failed = outcome.failed.length ? `, ${outcome.failed.length} failed` : '';
  process.stdout.write(`fleet ${action}: ${outcome.affected.length} run(s) ${action === 'trip' ? 'stopped' : 'cleared'}${failed}\n`);
  for (const f of outcome.failed) process.stdout.write(`  ${f.runId}: ${f.error}\n`);
}

/** The emergency-stop fields of one run, named as the reference safety system names them. */
function printEstopStatus(status: RunStatus, format: OutputFormat): void {
  if (format !== 'json') {
    printFields(statusFields(status));
    return;
  }
  printJson({
    runId: status.runId,
    emergency_stop: status.emergencyStop.active,
    consecutive_errors: status.consecutiveErrors,
    max_consecutive_errors: status.maxConsecutiveErrors,
    reason: status.emergencyStop.reason,
    since: status.emergencyStop.since,
  });
}
