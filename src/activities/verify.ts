import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { VerifyOutcome } from '../api/types.js';
import { scrubEnv } from '../tools/env.js';
import { runProcess } from '../tools/process-runner.js';
import type { ActivityDeps } from './deps.js';
import { workspaceFor } from './workspace.js';

export interface VerifyInput {
  runId: string;
  workspace?: string;
  command: string;
  timeoutMs: number;
  attempt: number;
}

/** The verification gate: runs the run's check command in its workspace; a failure is a value the model reads. */
export function createVerifyActivities(deps: ActivityDeps) {
  return {
    async runVerification(input: VerifyInput): Promise<VerifyOutcome> {
      const ctx = Context.current();
      const cwd = await workspaceFor(deps, input.runId, input.workspace);
      ctx.heartbeat({ phase: 'verify' });
      const outcome = await runProcess({
        command: input.command,
        cwd,
        env: scrubEnv(deps.env),
        timeoutMs: input.timeoutMs,
        signal: ctx.cancellationSignal,
        outputFile: path.join(cwd, '.tether', 'outputs', `verify-${input.attempt}.log`),
        onProgress: (p) => ctx.heartbeat({ phase: 'verify', bytes: p.bytes, elapsedMs: p.elapsedMs }),
      });
      if (outcome.aborted) throw ctx.cancellationSignal.reason ?? new Error('verification cancelled');
      const timedOut = outcome.timedOut ? `\n[verification timed out after ${input.timeoutMs} ms]` : '';
      return {
        passed: outcome.exitCode === 0 && !outcome.timedOut,
        attempts: input.attempt,
        exitCode: outcome.exitCode,
        output: outcome.output + timedOut,
      };
    },
  };
}
