/**
 * Fault storm: many runs at once, each model call drawn from success and
 * every way a provider fails (500, 503, 429 with Retry-After, a hang past the
 * call timeout, a reset before the answer or in the middle of it, malformed JSON, a slow trickle). At most one fault a
 * step, which every class's retry budget covers, so every run must complete
 * and the provider must see exactly one extra request per failed attempt. A
 * 400 or 401 must cost one request and fail the run at once, saying why.
 */
import type { Script, ScriptFault } from '../../../src/scripted/script.js';
import type { RunResult } from '../../../src/api/types.js';
import { startRun } from '../../../src/client/runs.js';
import { type ChaosContext, inBatches, type Scenario } from '../context.js';
import type { TetherClient } from '../../../src/client/runs.js';
import type { RecordedRequest } from '../../../src/scripted/chat.js';
import type { ScriptedServer } from '../../../src/scripted/server.js';
import { type Lost, resultWithin, runEvents, scriptedServer, workflowTaskFailures } from '../stack.js';

type Draw = Pick<ScriptFault, 'kind'> & Partial<ScriptFault>;
const DRAWS: Array<Draw | null> = [
  null,
  null,
  null,
  { kind: '500' },
  { kind: '503' },
  { kind: '429', retryAfterSec: 1 },
  { kind: 'hang' },
  { kind: 'reset' },
  { kind: 'cut' },
  { kind: 'malformed' },
  { kind: 'trickle', ms: 1_500 },
];
// The provider's failures count against its circuit breaker; one script per run stands for a
// provider per run, so the storm measures retries, not a breaker shared by 200 runs (see the README).
const TOOL_STEPS = 3;

function stormScript(ctx: ChaosContext): { script: Script; faults: Draw[] } {
  const faults: Draw[] = [];
  const steps = Array.from({ length: TOOL_STEPS + 1 }, (_, i) => {
    const draw = DRAWS[Math.floor(ctx.random() * DRAWS.length)];
    if (draw) faults.push(draw);
    const reply =
      i < TOOL_STEPS
        ? { toolCalls: [{ name: 'write_file', args: { path: `s${i}.txt`, content: `step ${i}` } }] }
        : { toolCalls: [{ name: 'finish', args: { summary: 'weathered the storm' } }] };
    return { reply, faults: draw ? [{ times: 1, ...draw }] : [] };
  });
  return { script: { steps } as Script, faults };
}

export const faultStorm: Scenario = async (ctx) => {
  const runs = ctx.quick ? 16 : 200;
  const storms = Array.from({ length: runs }, () => stormScript(ctx));
  const scripts: Record<string, Script> = Object.fromEntries(storms.map((s, i) => [`storm-${i}`, s.script]));
  scripts['fatal-400'] = { steps: [{ faults: [{ kind: '400', times: 1 }] }] } as Script;
  scripts['fatal-401'] = { steps: [{ faults: [{ kind: '401', times: 1 }] }] } as Script;
  const scripted = await scriptedServer(scripts);
  const taskQueue = `chaos-storm-${Date.now()}`;
  const worker = await ctx.stack.startWorker({ TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url });
  const tc = await ctx.stack.connect(taskQueue);
  const problems: string[] = [];
  try {
    const spec = (model: string) => ({ goal: 'storm', model, critic: { policy: 'off' as const }, limits: { llmTimeout: '3s', maxRuntime: '30m' } });
    const ids = await inBatches(storms, 50, async (_, i) => (await startRun(tc, spec(`scripted:storm-${i}`), { id: `storm-${Date.now()}-${i}` })).runId);
    const fatal = await Promise.all(
      ['400', '401'].map(async (code) => (await startRun(tc, spec(`scripted:fatal-${code}`), { id: `fatal-${code}-${Date.now()}` })).runId),
    );
    const results = await inBatches(ids, 50, (id) => resultWithin(tc, id, ctx.quick ? 150_000 : 900_000));
    let lost = 0;
    results.forEach((r, i) => {
      if (!completed(r)) {
        lost++;
        problems.push(`storm run ${ids[i]} (faults ${storms[i].faults.map((f) => f.kind).join(',')}) ended ${describe(r)}`);
      }
    });
    const faults = storms.reduce((n, s) => n + s.faults.length, 0);
    const failedAttempts = storms.reduce((n, s) => n + s.faults.filter((f) => f.kind !== 'trickle').length, 0);
    const expected = runs * (TOOL_STEPS + 1) + failedAttempts;
    const seen = ids.reduce((n, id) => n + scripted.requestsFor(id).length, 0);
    const late = ids.reduce((n, id) => n + lateReplies(scripted.requestsFor(id)), 0);
    if (seen !== expected + late)
      problems.push(
        `the provider saw ${seen} requests, expected ${expected} (one a step plus one a failed attempt) plus ${late} retries of replies that came too late`,
      );
    const notes = await unexpectedRequests(tc, scripted, ids, storms);
    const fatalWrong = await fatalRunsWrong(tc, scripted, fatal);
    lost += fatalWrong.length;
    problems.push(...fatalWrong);
    const taskFailures = await countTaskFailures(tc, [...ids, ...fatal]);
    if (taskFailures.length) problems.push(...taskFailures);
    return {
      name: 'fault storm',
      faults: faults + 2,
      runs: runs + 2,
      lost: lost + taskFailures.length,
      figures: { completed: results.filter((r) => completed(r)).length, requests: seen, expectedRequests: expected, retriedLateReplies: late },
      problems,
      notes,
    };
  } finally {
    await tc.close();
    await worker.kill('SIGTERM');
    await scripted.close();
  }
};

/** The runs whose model answered 400 and 401 (in that order) that did not fail on their one request, with its cause. */
async function fatalRunsWrong(tc: TetherClient, scripted: ScriptedServer, fatal: string[]): Promise<string[]> {
  const wrong: string[] = [];
  for (const [i, id] of fatal.entries()) {
    const r = await resultWithin(tc, id, 60_000);
    const requests = scripted.requestsFor(id).length;
    const cause = 'lost' in r ? '' : (r.cause ?? '');
    if ('lost' in r || r.status !== 'failed' || requests !== 1 || !/40[01]|API key|invalid request/i.test(cause)) {
      wrong.push(`a ${i ? '401' : '400'} should cost one request and fail the run with its cause: ${requests} requests, ended ${describe(r)}`);
    }
  }
  return wrong;
}

/**
 * Attempts the provider answered without a fault (or with a trickle, which is slow, not an error) that were
 * tried again all the same: their reply came after the attempt's deadline — a trickle past the 3 s call
 * timeout, or an attempt whose worker, starved on a loaded machine, missed its 30 s heartbeat. Retrying a call
 * past its deadline is the design; each costs one request more than the fault schedule, and the notes name them.
 */
function lateReplies(requests: RecordedRequest[]): number {
  return requests.filter((r) => (r.fault === null || r.fault === 'trickle') && requests.some((later) => later.step === r.step && later.attempt > r.attempt))
    .length;
}

/** For each run whose provider saw other than one request a step plus one a failed attempt: its requests, and why each attempt failed. */
async function unexpectedRequests(tc: TetherClient, scripted: ScriptedServer, ids: string[], storms: Array<{ faults: Draw[] }>): Promise<string[]> {
  const notes: string[] = [];
  for (const [i, id] of ids.entries()) {
    const requests = scripted.requestsFor(id);
    const expected = TOOL_STEPS + 1 + storms[i].faults.filter((f) => f.kind !== 'trickle').length;
    if (requests.length === expected) continue;
    const t0 = requests[0]?.at ?? 0;
    const seen = requests.map((r) => `step ${r.step} attempt ${r.attempt} ${r.fault ?? 'ok'}${r.stream ? '' : ' (not streamed)'} +${r.at - t0}ms`);
    const failures = (await runEvents(tc, id)).flatMap((e) => {
      const failed = e.activityTaskFailedEventAttributes?.failure?.message;
      const timedOut = e.activityTaskTimedOutEventAttributes?.failure?.message;
      return failed || timedOut ? [`${failed ? 'failed' : 'timed out'}: ${(failed ?? timedOut)?.slice(0, 160)}`] : [];
    });
    notes.push(`run ${id}: ${requests.length} requests, expected ${expected}: ${seen.join('; ')}; attempts that failed: ${failures.join(' | ') || 'none'}`);
  }
  return notes;
}

export function describe(r: RunResult | Lost): string {
  return 'lost' in r ? `not at all: still running when the wait ended (${r.lost})` : `${r.status}${r.cause ? ` (${r.cause.slice(0, 200)})` : ''}`;
}

export function completed(r: RunResult | Lost, summary?: string): r is RunResult {
  return !('lost' in r) && r.status === 'completed' && (summary === undefined || r.summary === summary);
}

/** One line per failed workflow task across the runs. */
export async function countTaskFailures(tc: Parameters<typeof workflowTaskFailures>[0], ids: string[]): Promise<string[]> {
  const lines = await inBatches(ids, 20, async (id) => (await workflowTaskFailures(tc, id)).map((m) => `run ${id}: workflow task failed: ${m.slice(0, 300)}`));
  return lines.flat();
}
