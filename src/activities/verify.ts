import { Context } from '@temporalio/activity';
import { sandboxSchema, type SandboxSpec } from '../api/spec.js';
import type { VerifyOutcome } from '../api/types.js';
import { runJailed } from '../tools/jail-run.js';
import type { ActivityDeps } from './deps.js';
import { workerSandbox } from './tools.js';
import { workspaceFor } from './workspace.js';

export interface VerifyInput {
  runId: string;
  workspace?: string;
  command: string;
  timeoutMs: number;
  attempt: number;
  /** The run whose workspace the check runs in when the spec names none: a sub-agent checks in its parent's. */
  workspaceOf?: string;
  /** The run's sandbox settings; absent from runs started before they existed (defaults apply). */
  sandbox?: SandboxSpec;
}

/**
 * The verification gate: runs the run's check command in its workspace,
 * confined like the run's tools (the model wrote what it runs). A failure is
 * a value the model reads.
 */
export function createVerifyActivities(deps: ActivityDeps) {
  const host = workerSandbox(deps);
  return {
    async runVerification(input: VerifyInput): Promise<VerifyOutcome> {
      const ctx = Context.current();
      const workspace = await workspaceFor(deps, input.workspaceOf ?? input.runId, input.workspace);
      ctx.heartbeat({ phase: 'verify' });
      const outcome = await runJailed({
        command: input.command,
        workspace,
        sandbox: input.sandbox ?? sandboxSchema.parse({}),
        timeoutMs: input.timeoutMs,
        name: `verify-${input.attempt}`,
        workerEnv: deps.env,
        host: await host(),
        signal: ctx.cancellationSignal,
        onProgress: (p) => ctx.heartbeat({ phase: 'verify', bytes: p.bytes, elapsedMs: p.elapsedMs }),
      });
      if (!outcome.ok) return { passed: false, attempts: input.attempt, exitCode: null, output: outcome.error };
      if (outcome.aborted) throw ctx.cancellationSignal.reason ?? new Error('verification cancelled');
      const notes = [outcome.timedOut ? `[verification timed out after ${input.timeoutMs} ms]` : '', outcome.limitNote ? `[${outcome.limitNote}]` : ''];
      return {
        passed: outcome.exitCode === 0 && !outcome.timedOut,
        attempts: input.attempt,
        exitCode: outcome.exitCode,
        output: [outcome.output, ...notes.filter(Boolean)].join('\n'),
      };
    },
  };
}
