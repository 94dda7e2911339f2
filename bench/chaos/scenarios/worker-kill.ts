/**
 * Worker SIGKILL in every phase. Each round starts one run per phase on a
 * worker, waits until every run is inside its phase (a model call, a shell
 * command, a stream of file writes, verification, a critic escalation asking
 * its model, compaction, the first steps after a continue-as-new),
 * SIGKILLs the worker and starts a new one. Every run must reach the end it would have reached; marker files
 * count executions, and the shell command, not idempotent, must not run twice.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TetherClient } from '../../../src/client/runs.js';
import { getStatus, getTranscript, startRun } from '../../../src/client/runs.js';
import type { ScriptedServer } from '../../../src/scripted/server.js';
import type { Script } from '../../../src/scripted/script.js';
import { type ChaosContext, type Scenario, until } from '../context.js';
import { resultWithin, runEvents, scriptedServer, type WorkerProcess } from '../stack.js';
import { completed, countTaskFailures, describe } from './fault-storm.js';

const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
const finish = (summary: string) => call('finish', { summary });
// Phases with a natural pause hold it this long on their first attempt, so the kill finds every run inside its phase.
const HOLD_MS = 90_000;
// Every compaction's first attempt holds (faults count per step), so a shorter hold keeps later ones from setting a round's pace.
const COMPACTION_HOLD_MS = 30_000;
// The stream of writes must outlast the slowest phase's arrival, which sets the kill's moment (3-8 s after the start on a
// quiet machine, more on a busy one): 60 writes 300 ms apart take ~20 s, and the run still ends inside the ~60 s the
// compaction phase holds every round anyway. (15 writes 150 ms apart had ended before the kill in 3 of 20 rounds once checkpoints got cheaper.)
const WRITES = 60;
const WRITE_DELAY_MS = 300;
const WRITE_CHARS = 2_000;
const CAN_HISTORY_EVENTS = 200; // the smallest a RunSpec allows
// A step writes about 10 events, so the run continues as new near step 20, well inside the quick steps, and is still in
// the slow ones, under its new execution, when the kill comes (the other phases take a few seconds to reach theirs).
const CAN_QUICK_STEPS = 30;
const CAN_SLOW_STEPS = 20;
const CAN_SLOW_STEP_MS = 500;
// The critic's model answers an escalation with this raise; the run must receive it exactly once.
const CRITIC_EXTEND_S = 77;
const criticAnswer = { text: JSON.stringify({ action: 'extend', extendBySeconds: CRITIC_EXTEND_S }) };

const scripts: Record<string, Script> = {
  'kill-model': {
    steps: [
      { ...call('write_file', { path: 'model.txt', content: 'after the model' }), faults: [{ kind: 'slow', ms: HOLD_MS, times: 1 }] },
      finish('model phase survived'),
    ],
  } as Script,
  'kill-shell': {
    steps: [call('shell', { command: 'echo run >> shell-marker; sleep 90; echo end >> shell-marker' }), finish('shell phase survived')],
  } as Script,
  'kill-write': {
    steps: [{ ...call('write_file', { path: 'w{{step}}.txt', content: `{{step}}${'x'.repeat(WRITE_CHARS)}` }), repeat: WRITES, delayMs: WRITE_DELAY_MS }],
    after: finish('write phase survived').reply,
  } as Script,
  'kill-verify': { steps: [finish('verify phase survived')] } as Script,
  // The run's model call stalls (on its retry after the kill too) so the run is still there when the critic's decision lands.
  'kill-critic': {
    steps: [
      {
        ...finish('critic phase survived'),
        faults: [
          { kind: 'slow', ms: 45_000, times: 1 },
          { kind: 'slow', ms: 15_000, times: 1 },
        ],
      },
    ],
  } as Script,
  // The critic's model holds its first attempt (the kill lands there); the retry, one step on, answers at once.
  'kill-critic-judge': { steps: [{ reply: criticAnswer, faults: [{ kind: 'slow', ms: 45_000, times: 1 }] }], after: criticAnswer } as Script,
  'kill-compaction': {
    steps: [{ ...call('write_file', { path: 'c{{step}}.txt', content: 'y'.repeat(1_500) }), repeat: 3 }],
    after: finish('compaction phase survived').reply,
    compaction: { faults: [{ kind: 'slow', ms: COMPACTION_HOLD_MS, times: 1 }] },
  } as Script,
  'kill-continue': {
    steps: [
      { ...call('write_file', { path: 'n{{step}}.txt', content: '{{step}}' }), repeat: CAN_QUICK_STEPS, delayMs: 20 },
      { ...call('write_file', { path: 'n{{step}}.txt', content: '{{step}}' }), repeat: CAN_SLOW_STEPS, delayMs: CAN_SLOW_STEP_MS },
    ],
    after: finish('continue phase survived').reply,
  } as Script,
};

interface PhaseRun {
  phase: string;
  runId: string;
  workspace: string;
}

const PHASES = ['model', 'shell', 'write', 'verify', 'critic', 'compaction', 'continue'] as const;

function specFor(phase: (typeof PHASES)[number], workspace: string) {
  const base = { goal: `kill during ${phase}`, model: `scripted:kill-${phase}`, workspace, critic: { policy: 'off' as const } };
  const limits = { llmTimeout: '3m', maxRuntime: '30m', maxSteps: 200 };
  if (phase === 'verify')
    return { ...base, limits, verify: { command: `echo v >> verify-marker; [ $(wc -l < verify-marker) -gt 1 ] || sleep ${HOLD_MS / 1000}` } };
  if (phase === 'critic') return { ...base, critic: { policy: 'llm' as const, softTimeout: '3s', model: 'scripted:kill-critic-judge' }, limits };
  if (phase === 'compaction') return { ...base, limits: { ...limits, maxContextChars: 2_000 } };
  if (phase === 'continue') return { ...base, limits: { ...limits, maxHistoryEvents: CAN_HISTORY_EVENTS } };
  return { ...base, limits };
}

async function count(file: string, word: string): Promise<number> {
  return ((await readFile(file, 'utf8').catch(() => '')).match(new RegExp(`^${word}$`, 'gm')) ?? []).length;
}

/** Whether the run is inside its phase now. */
async function inPhase(tc: TetherClient, scripted: ScriptedServer, run: PhaseRun): Promise<boolean> {
  const requests = scripted.requestsFor(run.runId);
  switch (run.phase) {
    case 'model':
      return requests.some((r) => r.step === 0);
    case 'shell':
      return (await count(path.join(run.workspace, 'shell-marker'), 'run')) > 0;
    case 'verify':
      return (await count(path.join(run.workspace, 'verify-marker'), 'v')) > 0;
    case 'critic':
      return scripted.requestsFor(`${run.runId}.critic`).length > 0;
    case 'compaction':
      return requests.some((r) => r.fault === 'slow');
    case 'write':
      return requests.length >= 5;
    default:
      return ((await getStatus(tc, run.runId)).continuedAsNew ?? 0) >= 1;
  }
}

/**
 * What went wrong with a run that ended, beyond its status; empty when it ended as it would have. A run that ended
 * well but did not go through its phase is added to `untested`: its kill proved nothing.
 */
async function checkEnd(tc: TetherClient, run: PhaseRun, counts: Record<string, number>, untested: string[]): Promise<string[]> {
  const at = (f: string) => path.join(run.workspace, f);
  if (run.phase === 'shell') {
    const runs = await count(at('shell-marker'), 'run');
    counts.shellExecutions += runs;
    const notice = (await getTranscript(tc, run.runId)).some((m) => m.role === 'tool' && /interrupted: the worker/.test(m.content));
    if (runs !== 1) return [`run ${run.runId}: the shell command ran ${runs} times; a non-idempotent tool must not run again blindly`];
    if (!notice) return [`run ${run.runId}: the interrupted shell call left no "interrupted" notice for the model`];
  }
  if (run.phase === 'verify') counts.verifyExecutions += await count(at('verify-marker'), 'v');
  if (run.phase === 'write') {
    const names = await readdir(run.workspace);
    const stray = names.filter((n) => !/^w\d+\.txt$/.test(n) && !n.startsWith('.'));
    for (let i = 0; i < WRITES; i++) {
      const content = await readFile(at(`w${i}.txt`), 'utf8').catch(() => null);
      if (content !== `${i}${'x'.repeat(WRITE_CHARS)}`)
        return [`run ${run.runId}: w${i}.txt is ${content === null ? 'missing' : `wrong (${content.length} chars)`}`];
    }
    if (stray.length) return [`run ${run.runId}: stray files after the writes: ${stray.join(', ')}`];
  }
  if (run.phase === 'critic') {
    const raises = await criticRaises(tc, run.runId);
    counts.criticDecisions += raises.length;
    if (raises.length !== 1 || raises[0] !== CRITIC_EXTEND_S * 1000)
      return [
        `run ${run.runId}: the critic's escalation should reach the run once as its model's raise of ${CRITIC_EXTEND_S} s, got ${JSON.stringify(raises)}`,
      ];
  }
  if (run.phase === 'continue') {
    let executions = 0;
    for await (const _ of tc.client.workflow.list({ query: `WorkflowId = '${run.runId}'` })) executions++;
    counts.continuedAsNew += Math.max(0, executions - 1);
    if (executions < 2) untested.push(`run ${run.runId} (continue) never continued as new, so its kill did not test continue-as-new`);
  }
  return [];
}

export const workerKill: Scenario = async (ctx) => {
  const rounds = ctx.quick ? 1 : 20;
  const scripted = await scriptedServer(scripts);
  const taskQueue = `chaos-kill-${Date.now()}`;
  const env = { TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url };
  let worker: WorkerProcess = await ctx.stack.startWorker(env);
  const tc = await ctx.stack.connect(taskQueue);
  const problems: string[] = [];
  const counts = { shellExecutions: 0, verifyExecutions: 0, criticDecisions: 0, continuedAsNew: 0, runsInFlightAtKill: 0 };
  const all: PhaseRun[] = [];
  let lost = 0;
  try {
    for (let round = 0; round < rounds; round++) {
      const roundStart = Date.now();
      // The replacement loads while the runs reach their phases and polls only after the kill, so no round waits for a start-up
      // and no phase can move to it before the kill.
      const standby = path.join(await ctx.stack.tempDir('standby'), 'go');
      const replacement = ctx.stack.startWorker({ ...env, CHAOS_STANDBY_FILE: standby });
      replacement.catch(() => undefined); // awaited after the kill, which reports its failure
      const runs = await Promise.all(PHASES.map((phase) => startPhaseRun(ctx, tc, phase, round)));
      all.push(...runs);
      const reached = await reachPhases(tc, scripted, runs, problems);
      // Every phase must still be under way at the kill: the slowest to arrive must not find the fastest gone.
      const still = await Promise.all(runs.map(async (run) => (await tc.client.workflow.getHandle(run.runId).describe()).status.name === 'RUNNING'));
      counts.runsInFlightAtKill += reached.filter((r, i) => r && still[i]).length;
      for (const [i, run] of runs.entries()) if (reached[i] && !still[i]) problems.push(`run ${run.runId} (${run.phase}) had ended before the kill`);
      const killedAt = Date.now();
      await worker.kill('SIGKILL');
      await writeFile(standby, '');
      worker = await replacement;
      const back = Date.now();
      const ends = await endsAfterKill(tc, runs, killedAt, counts, problems);
      lost += ends.filter((e) => e.wrong).length;
      const s = (ms: number) => `${Math.round(ms / 1000)}s`;
      ctx.log(
        `kill round ${round + 1}/${rounds}: killed ${s(killedAt - roundStart)} after the start, replacement ready ${s(back - killedAt)} after the kill, runs ended after the kill: ${ends.map((e) => e.label).join(', ')}`,
      );
    }
    const taskFailures = await countTaskFailures(
      tc,
      all.map((r) => r.runId),
    );
    problems.push(...taskFailures);
    return {
      name: 'worker SIGKILL',
      faults: rounds,
      runs: all.length,
      lost: lost + taskFailures.length,
      figures: { kills: rounds, phases: PHASES.length, ...counts },
      problems,
    };
  } finally {
    await tc.close();
    await worker.kill('SIGTERM');
    await scripted.close();
  }
};

/** Whether each run reached its phase within 90 s; one that did not is a problem. */
function reachPhases(tc: TetherClient, scripted: ScriptedServer, runs: PhaseRun[], problems: string[]): Promise<boolean[]> {
  return Promise.all(
    runs.map((run) =>
      until(`run ${run.runId} to reach its ${run.phase} phase`, () => inPhase(tc, scripted, run), 90_000).then(
        () => true,
        (err: Error) => {
          problems.push(err.message);
          return false;
        },
      ),
    ),
  );
}

/**
 * The runs end in parallel; each one's time after the kill says which phase a round waits for. `wrong`: the run did
 * not reach the end its phase should, or its end shows the kill did harm.
 */
function endsAfterKill(
  tc: TetherClient,
  runs: PhaseRun[],
  killedAt: number,
  counts: Record<string, number>,
  problems: string[],
): Promise<{ label: string; wrong: boolean }[]> {
  return Promise.all(
    runs.map(async (run) => {
      const r = await resultWithin(tc, run.runId, 240_000);
      const endedAfter = Math.round((Date.now() - killedAt) / 1000);
      const expected = `${run.phase} phase survived`;
      const wrong = !completed(r, expected) ? [`run ${run.runId} (${run.phase}) ended ${describe(r)}`] : await checkEnd(tc, run, counts, problems);
      problems.push(...wrong);
      return { label: `${run.phase} ${endedAfter}s`, wrong: wrong.length > 0 };
    }),
  );
}

/** The `by` of every `extend` the critic sent the run, in ms. */
async function criticRaises(tc: TetherClient, runId: string): Promise<number[]> {
  const events = await runEvents(tc, runId);
  return events
    .map((e) => e.workflowExecutionSignaledEventAttributes)
    .filter((a) => a?.signalName === 'extend')
    .map((a) => JSON.parse(Buffer.from(a?.input?.payloads?.[0]?.data ?? []).toString('utf8')) as { by?: number; audit?: { by?: string } })
    .filter((p) => p.audit?.by === 'critic')
    .map((p) => p.by ?? 0);
}

async function startPhaseRun(ctx: ChaosContext, tc: TetherClient, phase: (typeof PHASES)[number], round: number): Promise<PhaseRun> {
  const workspace = await ctx.stack.tempDir(`kill-${phase}`);
  const { runId } = await startRun(tc, specFor(phase, workspace), { id: `kill-${phase}-${round}-${Date.now()}` });
  return { phase, runId, workspace };
}
