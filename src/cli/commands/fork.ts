import type { Command } from 'commander';
import type { Audit } from '../../api/control.js';
import { TetherError } from '../../client/errors.js';
import type { ForkRequest } from '../../client/fork.js';
import { cliAudit, withAs } from '../actor.js';
import { withClient } from '../client.js';
import { printJson, required, verb } from '../output.js';

interface ForkOptions {
  atStep: string;
  steer?: string;
  model?: string;
  id?: string;
  as?: string;
  output: string;
}

/** A whole number of steps, or a usage error that says what was wrong. */
function stepOf(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new TetherError(`invalid --at-step "${value}": expected a step number (0 or more)`, 'invalid');
  return Number(value);
}

/** `tether fork <id> --at-step N`: a new run from step N of another, with its files as they were; prints the new id. */
export function registerForkCommand(program: Command): void {
  required(
    withAs(
      verb(
        program,
        'fork',
        "start a new run from step N of a run: its transcript up to N, its files as they were after N; prints the new run's id",
        '{ runId, forkOf }',
      ),
    ).argument('<id>', 'the run to fork (a fork or a run that continued as new works too)'),
    '--at-step <n>',
    'the step to fork after (0 = before the first step; `tether history <id>` numbers them)',
  )
    .option('--steer <message>', 'a message the model reads before its first step in the fork')
    .option('--model <provider:name>', "the fork's model (default: the original's)")
    .option('--id <id>', "the fork's run id (default: a new one)")
    .action((id: string, opts: ForkOptions) =>
      withClient<ForkOptions, { request: ForkRequest; audit: Audit }>(
        async (tc, _o, format, { request, audit }) => {
          const { forkRun } = await import('../../client/fork.js');
          const fork = await forkRun(tc, id, request, audit);
          if (format === 'json') return printJson(fork);
          process.stdout.write(`${fork.runId}\n`);
        },
        { prepare: async () => checkedFork(await forkRequestOf(opts), cliAudit(opts.as)) },
      )(opts),
    );
}

/** Checked before anything is sent: a fork's steer and who asked go into its history in clear. */
async function checkedFork(request: ForkRequest, audit: Audit): Promise<{ request: ForkRequest; audit: Audit }> {
  const { checkControlSecrets } = await import('../../client/run-start-check.js');
  checkControlSecrets('fork', { steer: request.steer, audit });
  return { request, audit };
}

/** The fork the flags ask for, checked as the panel checks its body, and its id as a start checks it. */
async function forkRequestOf(opts: ForkOptions): Promise<ForkRequest> {
  if (opts.steer !== undefined && !opts.steer.trim()) throw new TetherError('--steer must not be empty', 'invalid');
  const request = { step: stepOf(opts.atStep), steer: opts.steer, model: opts.model, id: opts.id };
  const [{ forkRequestSchema }, { describeIssues }, { checkRunId }] = await Promise.all([
    import('../../api/fork-request.js'),
    import('../../api/spec.js'),
    import('../../client/run-start-check.js'),
  ]);
  const parsed = forkRequestSchema.safeParse(request);
  if (!parsed.success) throw new TetherError(`fork: ${describeIssues(parsed.error)}`, 'invalid');
  if (request.id !== undefined) checkRunId(request.id);
  return request;
}
