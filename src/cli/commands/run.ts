import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { RunSpecInput } from '../../api/spec.js';
import type { TokenEvent } from '../../api/token-stream.js';
import type { RunResult, RunStatus } from '../../api/types.js';
import { serverGone, TetherError } from '../../client/errors.js';
import type { checkRunStart } from '../../client/run-start-check.js';
import type { TetherClient } from '../../client/runs.js';
import { withClient } from '../client.js';
import { EXIT, note, printFields, printJson, usd, type OutputFormat } from '../output.js';
import type { FollowOutcome } from '../follow.js';
import type { FollowEnded, RunEvent, RunEventTracker } from '../run-events.js';
import { pendingCallLine } from '../status-format.js';
import type { createProgressLine } from '../progress.js';
import { decimal } from '../decimal.js';

interface RunOptions {
  id?: string;
  model?: string;
  fallbackModels?: string;
  tools?: string;
  workspace?: string;
  system?: string;
  maxSteps?: string;
  maxRuntime?: string;
  maxConsecutiveErrors?: string;
  budgetUsd?: string;
  toolTimeout?: string;
  verify?: string;
  verifyAttempts?: string;
  critic?: string;
  softTimeout?: string;
  spec?: string;
  wait?: boolean;
  follow: boolean;
  detachOnInterrupt?: boolean;
  output: string;
}

export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('start an agent run (with --wait, follow it to the end)')
    .argument('[goal]', 'what the agent should achieve ("-" reads it from stdin)')
    .option('--id <id>', 'run id (= workflow id); generated when absent')
    .option('--model <provider:name>', 'model, e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:llama3.1, scripted:demo (default $TETHER_MODEL)')
    .option('--fallback-models <list>', 'comma-separated models to use when the first is down')
    .option('--tools <list>', 'comma-separated tools: shell,read_file,write_file,finish,ask_user,delegate')
    .option('--workspace <dir>', 'directory the tools work in (default: a fresh one per run)')
    .option('--system <prompt>', 'system prompt')
    .option('--max-steps <n>', 'step ceiling (default 50)')
    .option('--max-runtime <duration>', 'deadline, e.g. 30m')
    .option('--max-consecutive-errors <n>', 'failures in a row that trip the emergency stop (default 5)')
    .option('--budget-usd <usd>', 'cost ceiling; the run pauses for approval there')
    .option('--tool-timeout <duration>', 'per-tool timeout (default 120s)')
    .option('--verify <command>', 'verification gate run before the run may complete')
    .option('--verify-attempts <n>', 'verification attempts before needs_fix (default 3)')
    .option('--critic <policy>', 'critic policy: extend-once, llm, off')
    .option('--soft-timeout <duration>', 'idle time before the critic escalates (default 2m)')
    .option('--spec <file>', 'read the RunSpec from a JSON file, or stdin with "-" (flags override it)')
    .option('--wait', 'wait for the run to end, showing progress on stderr')
    .option('--no-follow', 'with --wait: stop (exit 12) when the run continues as new')
    .option('--detach-on-interrupt', 'with --wait: on Ctrl-C leave the run running instead of cancelling it')
    .option('--output <format>', 'text, json or stream-json', 'text')
    .action((goal: string | undefined, opts: RunOptions) =>
      withClient<RunOptions, CheckedStart>((tc, _o, format, start) => startAndReport(tc, start, opts, format), {
        prepare: () => checkStart(goal, opts),
        allowStream: true,
      })(opts),
    );
}

type CheckedStart = Awaited<ReturnType<typeof checkRunStart>>;

/** The run's spec from the flags, checked as the start will check it. */
async function checkStart(goal: string | undefined, opts: RunOptions): Promise<CheckedStart> {
  if (!opts.wait && !opts.follow) throw new TetherError('--no-follow is for following a run: use it with --wait', 'invalid');
  if (!opts.wait && opts.detachOnInterrupt) throw new TetherError('--detach-on-interrupt is for following a run: use it with --wait', 'invalid');
  const { checkRunStart } = await import('../../client/run-start-check.js');
  return checkRunStart(buildSpec(goal, opts), { id: opts.id });
}

/** Starts the run; without --wait prints its id, with --wait follows it and sets the exit code. */
async function startAndReport(tc: TetherClient, start: CheckedStart, opts: RunOptions, format: OutputFormat): Promise<void> {
  const { startRun } = await import('../../client/runs.js');
  // Listened for before the start is sent: a signal that comes while it is on its way lets it finish, and then
  // interrupts the wait (the run is cancelled, exit 11) or, without --wait, leaves the run named; never a run that
  // started with nobody told its id. A second signal exits at once.
  const interruption = listenForInterrupt();
  const then = opts.wait ? 'cancelled' : 'named';
  const duringStart = (sig: NodeJS.Signals) =>
    note(
      `${sig}: run ${start.runId} is being started; it is ${then} once the server answers (again to leave at once: \`tether status ${start.runId}\` then shows whether it started)`,
    );
  process.once('SIGINT', duringStart).once('SIGTERM', duringStart);
  const started = startRun(tc, start.spec, { id: start.runId }).finally(() => process.off('SIGINT', duringStart).off('SIGTERM', duringStart));
  const { runId, fleetStop } = await started.catch((err: unknown) => {
    interruption.stopListening();
    throw err;
  });
  if (fleetStop) {
    note(
      `the fleet emergency stop is active (${fleetStop}): this run starts emergency-stopped; clear it with tether estop clear ${runId} or tether estop clear --all`,
    );
  }
  if (!opts.wait) {
    interruption.stopListening();
    const signalled = interruption.why.signalled;
    if (signalled) note(`${signalled} came while run ${runId} was starting: it has started and goes on (\`tether kill ${runId} --reason "<why>"\` stops it)`);
    if (format === 'text') process.stdout.write(`${runId}\n`);
    else printJson({ runId, state: fleetStop ? 'emergency_stopped' : 'running' });
    return;
  }
  const waiting = await noWorkerYet(tc, runId);
  process.exitCode = await waitAndReport(tc, runId, format, opts, waiting, interruption);
}

/** SIGINT and SIGTERM, taken from their default (exiting at once) to interrupt the wait, and which one came; until `stopListening`. */
function listenForInterrupt(): { interrupt: AbortController; why: Interruption; stopListening: () => void } {
  const interrupt = new AbortController();
  const why: Interruption = { signalled: null, continuedFrom: null };
  const onSignal = (sig: NodeJS.Signals) => {
    why.signalled = sig;
    interrupt.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const stopListening = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  return { interrupt, why, stopListening };
}

/** Says on stderr when no worker polls the queue the run was started on (the first hour's `tether server` without `tether worker`); whether it did. */
async function noWorkerYet(tc: TetherClient, runId: string): Promise<boolean> {
  const { waitsForWorker, workerPresence } = await import('../../client/worker-presence.js');
  const presence = await workerPresence(tc, tc.taskQueue);
  if (!presence.live) note(waitsForWorker(runId, presence));
  return !presence.live;
}

function buildSpec(goal: string | undefined, opts: RunOptions): RunSpecInput {
  const base: Record<string, unknown> = opts.spec ? readSpecFile(opts.spec) : {};
  const limits: Record<string, unknown> = { ...(base.limits as object) };
  const critic: Record<string, unknown> = { ...(base.critic as object) };
  const list = (value: string) =>
    value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const int = (flag: string, value: string) => {
    const n = decimal(value);
    if (!value.trim() || !Number.isInteger(n)) throw new TetherError(`invalid ${flag} "${value}": expected an integer`, 'invalid');
    return n;
  };
  const num = (flag: string, value: string) => {
    const n = decimal(value);
    if (!value.trim() || !Number.isFinite(n)) throw new TetherError(`invalid ${flag} "${value}": expected a number`, 'invalid');
    return n;
  };
  // A flag given is used even when empty (`--verify ""`): the spec's checks then refuse it, rather than it quietly meaning "not given".
  if (opts.maxSteps !== undefined) limits.maxSteps = int('--max-steps', opts.maxSteps);
  if (opts.maxRuntime !== undefined) limits.maxRuntime = opts.maxRuntime;
  if (opts.maxConsecutiveErrors !== undefined) limits.maxConsecutiveErrors = int('--max-consecutive-errors', opts.maxConsecutiveErrors);
  if (opts.budgetUsd !== undefined) limits.budgetUsd = num('--budget-usd', opts.budgetUsd);
  if (opts.toolTimeout !== undefined) limits.toolTimeout = opts.toolTimeout;
  if (opts.critic !== undefined) critic.policy = opts.critic;
  if (opts.softTimeout !== undefined) critic.softTimeout = opts.softTimeout;
  const model = opts.model ?? (base.model as string | undefined) ?? process.env.TETHER_MODEL;
  if (!model) throw new TetherError('--model is required (e.g. --model openai:gpt-4.1-mini), or set TETHER_MODEL', 'invalid');
  const spec: Record<string, unknown> = { ...base, model };
  if (goal === '-' && opts.spec === '-') throw new TetherError('stdin can give the goal or the --spec, not both', 'invalid');
  if (goal !== undefined) spec.goal = goal === '-' ? readFileSync(0, 'utf8') : goal;
  if (spec.goal === undefined) throw new TetherError('a goal is required: tether run "<goal>"', 'invalid');
  if (opts.fallbackModels !== undefined) spec.fallbackModels = list(opts.fallbackModels);
  // `--tools ""`: no tools but finish, which every run has.
  if (opts.tools !== undefined) spec.tools = list(opts.tools);
  if (opts.workspace !== undefined) spec.workspace = opts.workspace;
  if (opts.system !== undefined) spec.system = opts.system;
  if (opts.verify !== undefined) spec.verify = { ...(base.verify as object), command: opts.verify };
  if (opts.verifyAttempts !== undefined) spec.verify = { ...(spec.verify as object), maxAttempts: int('--verify-attempts', opts.verifyAttempts) };
  if (Object.keys(limits).length) spec.limits = limits;
  if (Object.keys(critic).length) spec.critic = critic;
  return spec as RunSpecInput;
}

function readSpecFile(file: string): Record<string, unknown> {
  let spec: unknown;
  try {
    // A byte-order mark (some Windows editors write one) is no part of the JSON.
    spec = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8').replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new TetherError(`cannot read --spec ${file}: ${(err as Error).message}`, 'invalid');
  }
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new TetherError(
      `invalid --spec ${file}: a RunSpec is a JSON object, not ${spec === null ? 'null' : Array.isArray(spec) ? 'an array' : `a ${typeof spec}`}`,
      'invalid',
    );
  }
  return spec as Record<string, unknown>;
}

/** Follows the run to its end (or until it blocks or is interrupted) and returns the exit code. */
async function waitAndReport(
  tc: TetherClient,
  runId: string,
  format: OutputFormat,
  opts: RunOptions,
  toldNoWorker: boolean,
  { interrupt, why, stopListening }: ReturnType<typeof listenForInterrupt>,
): Promise<number> {
  const [{ followRun }, { RunEventTracker }] = await Promise.all([import('../follow.js'), import('../run-events.js')]);
  const { createProgressLine } = await import('../progress.js');
  const progress = createProgressLine();
  if (format === 'stream-json') printJson({ type: 'run_started', runId } as const);
  // One tracker for both streams: a step's first token announces the step, before its reply is in the transcript.
  const tracker = new RunEventTracker();
  try {
    const onStatus = (status: RunStatus) => {
      toldNoWorker = false;
      progress.update(status);
      // --no-follow: stop watching once this execution hands over to its continuation.
      if (!opts.follow && (status.continuedAsNew ?? 0) > 0 && why.continuedFrom === null) {
        why.continuedFrom = status.continuedAsNew ?? 0;
        interrupt.abort();
      }
    };
    const outcome = await withLiveTokens(tc, runId, tokenOutput(progress, format, tracker), () =>
      followRun(tc, runId, progressEvents(progress, format, runId), onStatus, {
        tracker,
        signal: interrupt.signal,
        // The wait goes on: the run resumes where it stopped once a worker takes it.
        onWaiting: (why) => {
          // The first wait of a run started with no worker was told of at the start.
          if (why && toldNoWorker) toldNoWorker = false;
          else progress.message(why ? `${why}. Still waiting for the run (Ctrl-C to stop).` : `run ${runId} answers again`);
        },
      }),
    );
    progress.done();
    return reportFollowOutcome(outcome, runId, format);
  } catch (err) {
    progress.done();
    if (!interrupt.signal.aborted) throw err;
    return reportInterrupted(tc, runId, format, opts, why, tracker);
  } finally {
    stopListening();
  }
}

/** Says where following the run stopped (a question, a held tool call, or its end) and returns the exit code. */
function reportFollowOutcome(outcome: FollowOutcome, runId: string, format: OutputFormat): number {
  const subAgent = outcome.kind !== 'ended' ? outcome.status.waitingSubAgent : undefined;
  const ofSubAgent = subAgent ? ` (its sub-agent ${subAgent}'s)` : '';
  const inSubAgent = subAgent ? { waitingSubAgent: subAgent } : {};
  if (outcome.kind === 'blocked') {
    note(`run ${runId} is blocked on a question${ofSubAgent}:\n  ${outcome.question}\nanswer it with: tether answer ${runId} "<text>"`);
    printFollowEnded(format, { runId, state: 'blocked', question: outcome.question, ...inSubAgent }, [['question', outcome.question]]);
    return EXIT.blocked;
  }
  if (outcome.kind === 'awaiting_tool_approval') {
    note(
      `run ${runId} holds a tool call for approval${ofSubAgent}:\n  ${pendingCallLine(outcome.call)}\ndecide with: tether decide ${runId} --approve | --deny --reason "<why>" | --edit '<json>'`,
    );
    printFollowEnded(format, { runId, state: 'awaiting_tool_approval', pendingToolCall: outcome.call, ...inSubAgent }, [
      ['tool call', pendingCallLine(outcome.call)],
    ]);
    return EXIT.blocked;
  }
  printResult(outcome.result, format);
  return outcome.result.status === 'completed' ? EXIT.ok : outcome.result.status === 'cancelled' ? EXIT.cancelled : EXIT.failed;
}

/** Why following stopped early: a signal, or (with --no-follow) the run continuing as new. */
interface Interruption {
  signalled: NodeJS.Signals | null;
  continuedFrom: number | null;
}

/** What `run --wait` shows of the run's events: every event as JSONL for stream-json; warnings, failures and state changes on the progress line. */
function progressEvents(progress: ReturnType<typeof createProgressLine>, format: OutputFormat, runId: string): (event: RunEvent) => void {
  return (event) => {
    if (format === 'stream-json') printJson(event);
    if (event.type === 'warning') progress.message(`warning: ${event.message}`);
    if (event.type === 'tool_finished' && !event.success) progress.message(`tool ${event.tool} failed: ${event.output.split('\n', 1)[0]}`);
    if (event.type === 'state_changed')
      progress.message(`state: ${event.from} → ${event.to}${event.cause ? ` (${event.cause})` : ''}${wayOn(event.to, runId)}`);
  };
}

/** A pause `run --wait` follows through: how to let the run go on, from any terminal. */
function wayOn(state: string, runId: string): string {
  if (state === 'emergency_stopped') return `; it waits until cleared: tether estop clear ${runId}`;
  if (state === 'awaiting_approval') return `; it waits for more budget: tether approve ${runId} --add-usd <amount>`;
  return '';
}

/** Runs `follow` while the run's live tokens are handed to `onToken`; they stop when it returns. */
async function withLiveTokens<T>(tc: TetherClient, runId: string, onToken: (event: TokenEvent) => void, follow: () => Promise<T>): Promise<T> {
  const { followTokens } = await import('../../client/token-follow.js');
  const stop = new AbortController();
  const tokens = followTokens(tc, runId, onToken, { signal: stop.signal }).catch(() => undefined);
  try {
    return await follow();
  } finally {
    stop.abort();
    await tokens;
  }
}

/** Live tokens: events of their own for stream-json; the text itself, and any notice, on stderr in text mode. */
function tokenOutput(progress: ReturnType<typeof createProgressLine>, format: OutputFormat, tracker: RunEventTracker): (event: TokenEvent) => void {
  return (event) => {
    // Every event of a call's stream is its step's: the step is announced before the first (a call may end with no token).
    if (format === 'stream-json') for (const started of tracker.stepStarted(event.step)) printJson(started);
    if (format === 'stream-json') printJson(event);
    if (format !== 'text') return;
    if (event.type === 'token') progress.tokens(event.text);
    else if (event.type === 'token_end') progress.endTokens();
    else progress.message(event.message);
  };
}

/** After an interruption: report a continue-as-new, leave the run running (--detach-on-interrupt), or cancel it. */
async function reportInterrupted(
  tc: TetherClient,
  runId: string,
  format: OutputFormat,
  opts: RunOptions,
  why: Interruption,
  tracker: RunEventTracker,
): Promise<number> {
  if (why.continuedFrom !== null) {
    note(`run ${runId} continued as new (execution ${why.continuedFrom + 1}); follow it with: tether status ${runId}`);
    printFollowEnded(format, { runId, state: 'continued_as_new', continuedAsNew: why.continuedFrom }, [['execution', String(why.continuedFrom + 1)]]);
    return EXIT.continued;
  }
  if (opts.detachOnInterrupt) {
    note(
      `${why.signalled}: left run ${runId} running. Follow it with: tether status ${runId} (or tether history ${runId}); stop it with: tether kill ${runId} --reason …`,
    );
    printFollowEnded(format, { runId, state: 'running', detached: true }, []);
    return EXIT.cancelled;
  }
  note(`${why.signalled}: cancelling run ${runId} … (again to leave at once; \`tether status ${runId}\` then shows whether the cancel reached it)`);
  const [{ cancelRun }, { waitForResult }] = await Promise.all([import('../../client/runs.js'), import('../../client/run-result.js')]);
  try {
    await cancelRun(tc, runId, `${why.signalled} in tether run`);
  } catch (err) {
    if (!serverGone(err)) throw err;
    // Nothing reached the run: it goes on when its server is back, and says so rather than leaving the promise above standing.
    note(
      `the Temporal server does not answer, so run ${runId} was not cancelled: it goes on once the server is back. Cancel it then with: tether kill ${runId} --reason …`,
    );
    printFollowEnded(format, { runId, state: 'running', detached: true }, []);
    return EXIT.cancelled;
  }
  const result = await cancelledOrNoWorker(tc, runId, () => waitForResult(tc, runId));
  if (!result) {
    note(
      `the cancel of run ${runId} is recorded, but no worker polls its queue to carry it out: the run ends cancelled once one does (tether worker); \`tether status ${runId}\` shows it`,
    );
    printFollowEnded(format, { runId, state: 'running', cancelRequested: true }, [['cancel', 'requested']]);
    return EXIT.cancelled;
  }
  // Following stopped at the signal, before the run's own result event: the stream ends with it all the same.
  if (format === 'stream-json')
    for (const event of [...tracker.unansweredAtEnd(result), ...tracker.endedAs(result), { type: 'result', result } satisfies RunEvent]) printJson(event);
  else printResult(result, format);
  return EXIT.cancelled;
}

/** How long a cancelled run gets to end before `run --wait` asks whether any worker is there to end it, and then between asks. */
const FIRST_CANCEL_GRACE_MS = 1_000;
const CANCEL_GRACE_MS = 10_000;

/**
 * The run's result once its cancel is carried out, or null when no worker
 * polls its queue to carry it out: a service manager's SIGTERM must not wait
 * for a worker that may never come.
 */
async function cancelledOrNoWorker(tc: TetherClient, runId: string, result: () => Promise<RunResult>): Promise<RunResult | null> {
  // The wait for the result is a long poll: given up, it is cut, so the CLI exits now rather than when the poll ends.
  const giveUp = new AbortController();
  const ending = tc.connection.withAbortSignal(giveUp.signal, result);
  // A worker carries a cancel out within a second: past that, whether one is there at all is asked at once.
  for (let grace = FIRST_CANCEL_GRACE_MS; ; grace = CANCEL_GRACE_MS) {
    const ended = await Promise.race([ending, sleep(grace, null, { ref: false })]);
    if (ended) return ended;
    const { workerPresence } = await import('../../client/worker-presence.js');
    const description = await tc.client.workflow.getHandle(runId).describe();
    if (!(await workerPresence(tc, description.taskQueue)).live) {
      ending.catch(() => undefined);
      giveUp.abort();
      return null;
    }
  }
}

/**
 * Where `run --wait` stops following a run that goes on (blocked, holding a
 * call, continued as new, left running): its id and state on stdout in every
 * format, as the last line of a stream.
 */
function printFollowEnded(format: OutputFormat, stop: FollowEnded, fields: Array<[string, string]>): void {
  if (format === 'json') printJson(stop);
  else if (format === 'stream-json') printJson({ type: 'follow_ended', ...stop } satisfies RunEvent);
  else printFields([['run', stop.runId], ['state', stop.state], ...fields]);
}

function printResult(result: RunResult, format: OutputFormat): void {
  if (format === 'json') {
    printJson(result);
    return;
  }
  if (format === 'stream-json') return;
  printFields([
    ['run', result.runId],
    ['status', result.status],
    ['steps', String(result.steps)],
    ['cost', usd(result.costUsd)],
    ['tokens', `${result.usage.inputTokens} in / ${result.usage.outputTokens} out`],
    ...(result.cause ? [['cause', result.cause] as [string, string]] : []),
    ...(result.verify ? [['verify', `${result.verify.passed ? 'passed' : 'failed'} after ${result.verify.attempts} attempt(s)`] as [string, string]] : []),
    ...(result.summary ? [['summary', result.summary] as [string, string]] : []),
  ]);
}
