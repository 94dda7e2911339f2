import path from 'node:path';
import type { Command } from 'commander';
import { tetherHome } from '../../api/home.js';
import type { RunResult } from '../../api/types.js';
import { type Lifecycle, runService, type Started } from '../lifecycle.js';
import type { LocalStack } from '../local-stack.js';
import { action, localServerOptions, note, type OutputFormat, printFields, printJson, usd, verb } from '../output.js';
import { stackPortOptions } from '../ports.js';
import type { RunEvent } from '../run-events.js';
import { runUrl } from '../temporal-ui.js';

/** The demo's goal and gate: the scripted agent writes a program, fails verification once, fixes it. */
const DEMO_GOAL =
  'Write fizzbuzz.mjs exporting fizzbuzz(n) (Fizz for multiples of 3, Buzz for 5, FizzBuzz for both, else the number as a string), with a test in test.mjs.';

interface DemoOptions {
  exit?: boolean;
  port: string;
  uiPort: string;
  panelPort: string;
  output: string;
}

/** `tether demo`: a local stack and a scripted agent run, followed to its end. */
export function registerDemoCommand(program: Command): void {
  const description = 'start a server and a worker, run a scripted agent that writes, verifies and fixes a small program';
  localServerOptions(verb(program, 'demo', description, 'the RunResult and its history link'))
    .option('--exit', 'stop when the run has ended instead of serving until Ctrl-C')
    .option('--panel-port <port>', 'web panel port (0 = none)', '8787')
    .action(action((opts: DemoOptions, format) => runService((life) => demo(life, opts, format))));
}

async function demo(life: Lifecycle, opts: DemoOptions, format: OutputFormat): Promise<Started> {
  // Loaded here so that only the verbs that run a worker load it.
  const { startLocalStack } = await import('../local-stack.js');
  const stack = await startLocalStack(life, {
    command: 'demo',
    ...stackPortOptions(opts),
    reuseServer: true,
  });
  note(stack.banner);
  const outcome = await runDemo(stack, life);
  if (outcome.kind === 'ended') printDemoResult(stack, outcome.result, format);
  if (outcome.kind === 'stack-ended') return { ended: stack.ended };
  if (opts.exit) return { ended: Promise.resolve() };
  note('\nServing (Temporal UI, worker, panel). Ctrl-C to stop.');
  return { ended: stack.ended };
}

/** Starts the demo run and follows it, with each tool call and state change on the progress line, until it ends or a signal comes. */
async function runDemo(stack: LocalStack, life: Lifecycle) {
  const { startRun } = await import('../../client/runs.js');
  const { followRun } = await import('../follow.js');
  const { createProgressLine } = await import('../progress.js');
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
  const showEvent = (event: RunEvent) => {
    if (event.type === 'tool_started') progress.message(`  step ${event.step}: ${event.tool} ${JSON.stringify(event.args).slice(0, 100)}`);
    if (event.type === 'tool_finished')
      progress.message(`    → ${event.success ? 'ok' : 'FAILED'}: ${event.output.split('\n').slice(0, 3).join(' | ').slice(0, 160)}`);
    if (event.type === 'state_changed') progress.message(`  state ${event.from} → ${event.to}`);
  };
  const stop = new AbortController();
  void life.interrupted.then(() => stop.abort());
  // The worker or the server ended by itself (said where it is noticed): following would wait for it forever.
  const stackEnded = new Error('the stack ended by itself');
  const abandon = () => stop.abort(stackEnded);
  void stack.ended.then(abandon, abandon);
  try {
    return await followRun(stack.tc, runId, showEvent, (status) => progress.update(status), { signal: stop.signal });
  } catch (err) {
    life.check();
    if (err === stackEnded) return { kind: 'stack-ended' as const };
    throw err;
  } finally {
    progress.done();
  }
}

/** The RunResult and a link to its history in the Temporal UI; the exit code says whether it completed. */
function printDemoResult(stack: LocalStack, r: RunResult, format: OutputFormat): void {
  const historyUrl = runUrl(stack.uiUrl, stack.tc.namespace, r.runId);
  process.exitCode = r.status === 'completed' ? 0 : 1;
  if (format === 'json') {
    printJson({ ...r, historyUrl });
    return;
  }
  process.stdout.write('\n');
  printFields([
    ['run', r.runId],
    ['status', r.status],
    ['steps', String(r.steps)],
    ['verification', r.verify ? `${r.verify.passed ? 'passed' : 'failed'} on attempt ${r.verify.attempts}` : '-'],
    ['cost', usd(r.costUsd)],
    ['summary', r.summary ?? r.cause ?? ''],
    ['history', historyUrl],
    ['steps in detail', `${stack.cliPrefix}tether history ${r.runId}`],
  ]);
}
