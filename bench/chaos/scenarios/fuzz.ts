/**
 * Fuzz: generated RunSpecs through the public startRun path (a clear
 * validation error or a run that ends), control payloads sent as raw Signals
 * and Updates from a plain Temporal client, and garbage from the model. The
 * invariants: no workflow task ever fails, no run is left stuck.
 */
import fc from 'fast-check';
import { controlSchemas, salvageSignal } from '../../../src/api/control.js';
import { isTerminal } from '../../../src/api/types.js';
import { deliverUpdate, getStatus, getTranscript, startRun, TetherError, type TetherClient } from '../../../src/client/runs.js';
import type { Script } from '../../../src/scripted/script.js';
import { type ChaosContext, inBatches, type Scenario } from '../context.js';
import { resultWithin, scriptedServer } from '../stack.js';
import { countTaskFailures, describe } from './fault-storm.js';
import { CONTROL_MESSAGE_NAMES, controlPayloadArbitrary, runSpecArbitrary } from './fuzz-inputs.js';

const finish = { toolCalls: [{ name: 'finish', args: { summary: 'fuzz done' } }] };
// Cheap cases first: a case that wedges the worker is then named by the first one lost.
const GARBAGE: Record<string, Script> = {
  'garbage-empty': { steps: [{ reply: {} }] } as Script,
  'garbage-whitespace': { steps: [{ reply: { text: ' \n\t  \n ' } }] } as Script,
  'garbage-json': { steps: [{ reply: { toolCalls: [{ name: 'write_file', rawArguments: '{"path": "a.txt", "content": ' }] } }], after: finish } as Script,
  'garbage-unknown-tool': { steps: [{ reply: { toolCalls: [{ name: 'launch_missiles', args: { target: 'moon' } }] } }], after: finish } as Script,
  'garbage-1mb-args': {
    steps: [{ reply: { toolCalls: [{ name: 'write_file', args: { path: 'big.txt', content: 'x'.repeat(1_000_000) } }] } }],
    after: finish,
  } as Script,
  'garbage-5000-calls': {
    steps: [{ reply: { toolCalls: Array.from({ length: 5_000 }, (_, i) => ({ name: 'read_file', args: { path: `f${i}` } })) } }],
    after: finish,
  } as Script,
};
const SCRIPTS: Record<string, Script> = {
  ...GARBAGE,
  'fuzz-ok': { steps: [], after: finish } as Script,
  'fuzz-long': {
    steps: [{ reply: { toolCalls: [{ name: 'write_file', args: { path: 'l.txt', content: '{{step}}' } }] }, repeat: 100_000, delayMs: 1_000 }],
  } as Script,
};

export const fuzz: Scenario = async (ctx) => {
  const scripted = await scriptedServer(SCRIPTS);
  const taskQueue = `chaos-fuzz-${Date.now()}`;
  const env = { TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url };
  let worker = await ctx.stack.startWorker(env);
  const fresh = async () => {
    await worker.kill('SIGKILL');
    worker = await ctx.stack.startWorker(env);
  };
  const tc = await ctx.stack.connect(taskQueue);
  const seed = Math.floor(ctx.random() * 2 ** 31);
  try {
    const specs = await fuzzSpecs(ctx, tc, seed);
    const control = await fuzzControl(ctx, tc, seed);
    const garbage = await garbageReplies(ctx, tc, fresh);
    const ids = [...specs.started, ...control.targets, ...garbage.ids];
    const taskFailures = await countTaskFailures(tc, ids);
    const problems = [...specs.problems, ...control.problems, ...garbage.problems, ...taskFailures];
    return {
      name: 'fuzz',
      faults: specs.tried + control.sent + Object.keys(GARBAGE).length,
      runs: ids.length,
      lost: problems.length,
      figures: {
        specs: specs.tried,
        specsRefused: specs.refused,
        specsStarted: specs.started.length,
        controlPayloads: control.sent,
        workflowTaskFailures: taskFailures.length,
        garbageReplies: Object.keys(GARBAGE).length,
      },
      problems,
      notes: garbage.outcomes,
    };
  } finally {
    await tc.close();
    await worker.kill('SIGTERM');
    await scripted.close();
  }
};

/** RunSpecs through startRun: each is refused with a clear message, or starts a run that ends. */
async function fuzzSpecs(ctx: ChaosContext, tc: TetherClient, seed: number) {
  const count = ctx.quick ? 200 : 1_000;
  const toStart = ctx.quick ? 8 : 40;
  const root = await ctx.stack.tempDir('fuzz-ws');
  const specs = fc.sample(runSpecArbitrary(root), { numRuns: count, seed });
  const problems: string[] = [];
  const started: string[] = [];
  let refused = 0;
  await inBatches(specs, 10, async (spec, i) => {
    if (started.length >= toStart) {
      // Past the sample to start, the same zod path decides without a run.
      const { runSpecSchema } = await import('../../../src/api/spec.js');
      if (!runSpecSchema.safeParse(spec).success) refused++;
      return;
    }
    try {
      const { runId } = await startRun(tc, spec, { id: `fuzz-spec-${Date.now()}-${i}` });
      started.push(runId);
    } catch (err) {
      if (err instanceof TetherError && /^invalid RunSpec: \S/.test(err.message)) refused++;
      else problems.push(`spec #${i} (seed ${seed}) threw ${(err as Error).name}: ${(err as Error).message.slice(0, 300)} — not a clear validation error`);
    }
  });
  const results = await inBatches(started, 10, (id) => resultWithin(tc, id, 180_000));
  results.forEach((r, i) => {
    if ('lost' in r) problems.push(`fuzzed run ${started[i]} did not end: ${describe(r)}`);
    else if (r.status === 'failed' && !r.cause) problems.push(`fuzzed run ${started[i]} failed without a cause`);
  });
  return { tried: count, refused, started, problems };
}

/** Raw Signals and Updates to live runs: nothing may fail a workflow task, and every run must still obey a valid kill. */
async function fuzzControl(ctx: ChaosContext, tc: TetherClient, seed: number) {
  const count = ctx.quick ? 200 : 1_000;
  const targets = await Promise.all(
    [0, 1, 2].map(async (i) => {
      const spec = {
        goal: 'take control payloads',
        model: 'scripted:fuzz-long',
        critic: { policy: 'off' as const },
        limits: { maxSteps: 1_000_000, maxRuntime: '2h' },
      };
      return (await startRun(tc, spec, { id: `fuzz-control-${Date.now()}-${i}` })).runId;
    }),
  );
  const payloads = fc.sample(fc.tuple(fc.constantFrom(...CONTROL_MESSAGE_NAMES), controlPayloadArbitrary, fc.boolean(), fc.nat(2)), { numRuns: count, seed });
  let sent = 0;
  await inBatches(payloads, 8, async ([name, payload, asUpdate, target]) => {
    // A kill that applies would end the run early and leave the rest nothing to hit; it comes last, on purpose.
    // A Signal's overlong reason is cut, and fields a kill does not know are dropped, and the kill applies (salvageSignal):
    // such a kill is held back too.
    if (name === 'kill' && controlSchemas.kill.safeParse(salvageSignal('kill', payload)).success) payload = { reason: 42 };
    const handle = tc.client.workflow.getHandle(targets[target]);
    sent++;
    await (asUpdate ? handle.executeUpdate(name, { args: [payload] }) : handle.signal(name, payload)).catch(() => undefined);
  });
  const problems: string[] = [];
  for (const runId of targets) {
    const handle = tc.client.workflow.getHandle(runId);
    try {
      await getStatus(tc, runId);
      // Still plain Updates, but resent when the server drops one undelivered, as Tether's own client does: a kill
      // that ends the run in the same workflow task as an activity completes is turned back (UnhandledCommand), and
      // since server 1.27 the Update goes with it (`deliverUpdate` in src/client/runs.ts). Not resending lost a run once.
      await deliverUpdate((updateId) => handle.executeUpdate('clearEmergency', { args: [{}], updateId })).catch(() => undefined);
      await deliverUpdate((updateId) => handle.executeUpdate('kill', { args: [{ reason: 'fuzz over' }], updateId }));
    } catch (err) {
      problems.push(`run ${runId} no longer answers after the fuzzed payloads: ${(err as Error).message.slice(0, 300)}`);
    }
    const r = await resultWithin(tc, runId, 120_000);
    if ('lost' in r || r.status !== 'killed') problems.push(`run ${runId} should end killed after the fuzz, ended ${describe(r)}`);
  }
  return { sent, targets, problems };
}

/**
 * Each garbage reply becomes a tool error or a clear run ending, never a
 * stuck run. One case at a time; a case whose run does not end gets the
 * worker replaced, so the next case is judged on its own.
 */
async function garbageReplies(ctx: ChaosContext, tc: TetherClient, fresh: () => Promise<void>) {
  const ids: string[] = [];
  const problems: string[] = [];
  const outcomes: string[] = [];
  for (const name of Object.keys(GARBAGE)) {
    const { runId } = await startRun(tc, { goal: name, model: `scripted:${name}`, critic: { policy: 'off' } }, { id: `${name}-${Date.now()}` });
    ids.push(runId);
    const paused = await pausedWithReason(tc, runId, ctx.quick ? 90_000 : 300_000);
    if (paused) {
      // A pause that says why (5,000 failing calls trip the emergency stop) is a clear ending: an operator decides.
      outcomes.push(`${name}: ${paused}`);
      const handle = tc.client.workflow.getHandle(runId);
      await deliverUpdate((updateId) => handle.executeUpdate('kill', { args: [{ reason: 'chaos: garbage case paused' }], updateId }));
      continue;
    }
    const r = await resultWithin(tc, runId, 30_000);
    if ('lost' in r) {
      problems.push(`${name}: the run did not end: ${describe(r)}`);
      outcomes.push(`${name}: did not end`);
      await tc.client.workflow
        .getHandle(runId)
        .terminate('chaos: garbage case did not end')
        .catch(() => undefined);
      await fresh();
      continue;
    }
    const toolError = (await getTranscript(tc, runId).catch(() => [])).find((m) => m.role === 'tool' && !m.success);
    const how = `${r.status}${r.cause ? ` (${r.cause.slice(0, 160)})` : ''}${toolError?.role === 'tool' ? `; first tool error: ${toolError.content.slice(0, 160)}` : ''}`;
    outcomes.push(`${name}: ${how}`);
    if (r.status === 'failed' && !r.cause) problems.push(`${name}: failed without a cause`);
  }
  return { ids, problems, outcomes };
}

/** Waits until the run ends or pauses; the pause and its reason when it paused, else null. */
async function pausedWithReason(tc: TetherClient, runId: string, timeoutMs: number): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const status = await getStatus(tc, runId).catch(() => null);
    if (status && isTerminal(status.state)) return null;
    if (status?.state === 'emergency_stopped' && status.emergencyStop.reason) return `emergency_stopped (${status.emergencyStop.reason.slice(0, 160)})`;
    await new Promise((r) => setTimeout(r, 250));
  }
  return null;
}
