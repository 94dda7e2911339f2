import type { Command } from 'commander';
import type { ControlInput } from '../../api/control.js';
import { isTerminal, type RunStatus } from '../../api/types.js';
import { RunEndedError, TetherError } from '../../client/errors.js';
import { cliAudit, withAs } from '../actor.js';
import { withClient } from '../client.js';
import { confirmation } from '../confirmations.js';
import { printJson, verb } from '../output.js';

interface DecideOptions {
  approve?: boolean;
  deny?: boolean;
  edit?: string;
  reason?: string;
  call?: string;
  as?: string;
  output: string;
}

/** The decision the flags ask for, without its callId; exactly one of --approve, --deny, --edit. Pure. */
export function decisionFromFlags(opts: Omit<DecideOptions, 'output' | 'as'>): Omit<ControlInput<'decideTool'>, 'callId'> {
  const chosen = [opts.approve && '--approve', opts.deny && '--deny', opts.edit !== undefined && '--edit'].filter(Boolean);
  if (chosen.length !== 1)
    throw new TetherError(`decide needs exactly one of --approve, --deny, --edit '<json>' (got ${chosen.join(', ') || 'none'})`, 'invalid');
  const reason = opts.reason !== undefined ? { reason: opts.reason } : {};
  if (opts.approve) return { decision: 'approve', ...reason };
  if (opts.deny) {
    if (!opts.reason?.trim()) throw new TetherError('--deny needs --reason: the model reads it as the call’s result', 'invalid');
    return { decision: 'deny', ...reason };
  }
  return { decision: 'edit', args: editedArgs(opts.edit!), ...reason };
}

function editedArgs(text: string): Record<string, unknown> {
  let args: unknown;
  try {
    args = JSON.parse(text);
  } catch (err) {
    throw new TetherError(`--edit takes the call's arguments as a JSON object: ${(err as Error).message}`, 'invalid');
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    throw new TetherError('--edit takes the call\'s arguments as a JSON object, e.g. \'{"command":"ls"}\'', 'invalid');
  return args as Record<string, unknown>;
}

type Decision = Omit<ControlInput<'decideTool'>, 'callId'>;

/**
 * The decision and its audit, checked against the message's schema before
 * anything is asked of the server. The call's id may come from the run's
 * status later; until then a stand-in fills it (the stale-call check is the
 * run's, on the real id).
 */
async function checkedDecision(opts: DecideOptions): Promise<Decision> {
  const decision = { ...decisionFromFlags(opts), audit: cliAudit(opts.as) };
  const { validControl } = await import('../control-input-schema.js');
  validControl('decideTool', { callId: opts.call ?? 'the call waiting now', ...decision });
  return decision;
}

/** The id of the call the run holds; an ended run is refused as every control message to one is. */
function waitingCall(status: RunStatus): string | undefined {
  if (isTerminal(status.state)) throw new RunEndedError(`decideTool: run ${status.runId} has already ended (${status.state})`);
  return status.pendingToolCall?.callId;
}

/** `tether decide <id> --approve | --deny --reason … | --edit '<json>'`: the decision on the tool call the run holds. */
export function registerDecideCommand(program: Command): void {
  withAs(verb(program, 'decide', 'decide on the tool call a run holds for approval: --approve, --deny --reason, or --edit with new arguments'))
    .argument('<id>', 'run id')
    .option('--approve', 'run the call as the model sent it')
    .option('--deny', 'do not run it; the model reads --reason as its result')
    .option('--edit <json>', 'run it with these arguments instead (a JSON object); the model is told')
    .option('--reason <text>', 'why (required with --deny)')
    .option('--call <callId>', 'the call to decide on; default: the one waiting now (a decision for another call is refused as stale)')
    .action((id: string, opts: DecideOptions) =>
      withClient<DecideOptions, Decision>(
        async (tc, _o, format, decision) => {
          const { controlRun, getStatus } = await import('../../client/runs.js');
          const callId = opts.call ?? waitingCall(await getStatus(tc, id));
          if (!callId) throw new TetherError(`run ${id} has no tool call waiting for approval`, 'rejected');
          const status = await controlRun(tc, id, 'decideTool', { callId, ...decision });
          if (format === 'json') return printJson(status);
          process.stdout.write(`${confirmation('decideTool', status)}\n`);
        },
        { prepare: () => checkedDecision(opts) },
      )(opts),
    );
}
