import path from 'node:path';
import type { Command } from 'commander';
import { startRun } from '../../client/runs.js';
import { tetherHome } from '../../server/temporal-cli.js';
import { followRun } from '../follow.js';
import { note, printFields, printJson, serviceAction, usd } from '../output.js';
import { createProgressLine } from '../progress.js';
import { startLocalStack } from '../local-stack.js';
import { untilSignal } from './serve.js';

/** The demo's goal and gate: the scripted agent writes a program, fails verification once, fixes it. */
const DEMO_GOAL = 'Write fizzbuzz.mjs exporting fizzbuzz(n) (Fizz for multiples of 3, Buzz for 5, FizzBuzz for both, else the number as a string), with a test in test.mjs.';

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('start a server and a worker, run a scripted agent that writes, verifies and fixes a small program')
    .option('--exit', 'stop when the run has ended instead of serving until Ctrl-C')
    .option('--port <port>', 'Temporal gRPC port', '7233')
    .option('--ui-port <port>', 'Temporal UI port', '8233')
    .option('--panel-port <port>', 'web panel port (0 = none)', '8787')
    .option('--output <format>', 'text or json (the RunResult and its history link)', 'text')
    .action(
      serviceAction(async (opts: { exit?: boolean; port: string; uiPort: string; panelPort: string; output: string }, format) => {
        let stack: Awaited<ReturnType<typeof startLocalStack>> | undefined;
        try {
          stack = await startLocalStack({ port: Number(opts.port), uiPort: Number(opts.uiPort), panelPort: Number(opts.panelPort), reuseServer: true });
          note(stack.banner);
          const runId = `demo-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-')}`;
          const workspace = path.join(tetherHome(), 'demo', runId);
          await startRun(
            stack.tc,
            {
              goal: DEMO_GOAL,
              model: 'scripted:demo',
              workspace,
              tools: ['shell', 'read_file', 'write_file', 'finish'],
              verify: { command: 'node test.mjs', maxAttempts: 3 },
              limits: { maxSteps: 20, maxRuntime: '5m' },
              critic: { policy: 'off' },
            },
            { id: runId },
          );
          note(`\nstarted ${runId} (workspace ${workspace})`);
          const progress = createProgressLine();
          const outcome = await followRun(
            stack.tc,
            runId,
            (event) => {
              if (event.type === 'tool_started') progress.message(`  step ${event.step}: ${event.tool} ${JSON.stringify(event.args).slice(0, 100)}`);
              if (event.type === 'tool_finished') progress.message(`    → ${event.success ? 'ok' : 'FAILED'}: ${event.output.split('\n').slice(0, 3).join(' | ').slice(0, 160)}`);
              if (event.type === 'state_changed') progress.message(`  state ${event.from} → ${event.to}`);
            },
            (status) => progress.update(status),
          );
          progress.done();
          if (outcome.kind === 'ended') {
            const r = outcome.result;
            const historyUrl = `${stack.uiUrl}/namespaces/${stack.tc.namespace}/workflows/${encodeURIComponent(r.runId)}`;
            process.exitCode = r.status === 'completed' ? 0 : 1;
            if (format === 'json') {
              printJson({ ...r, historyUrl });
            } else {
              process.stdout.write('\n');
              printFields([
                ['run', r.runId],
                ['status', r.status],
                ['steps', String(r.steps)],
                ['verification', r.verify ? `${r.verify.passed ? 'passed' : 'failed'} on attempt ${r.verify.attempts}` : '-'],
                ['cost', usd(r.costUsd)],
                ['summary', r.summary ?? r.cause ?? ''],
                ['history', historyUrl],
              ]);
            }
          }
          if (opts.exit) return;
          note('\nServing (Temporal UI, worker, panel). Ctrl-C to stop.');
          await untilSignal(async () => undefined);
        } finally {
          await stack?.stop();
        }
      }),
    );
}
