import { type CliRun, runCli } from './helpers/cli-process.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../src/scripted/script.js';
import { fetchLastModelCalls, readChain, readLastModelCalls } from '../src/history/fetch.js';
import type { ExecutionEvents } from '../src/history/events.js';
import { readRunHistory } from '../src/history/run-history.js';
import { costPerStep, timelineOf } from '../src/history/timeline.js';
import { type Harness, startHarness } from './helpers/harness.js';

const write = { reply: { toolCalls: [{ name: 'write_file', args: { path: 'n.txt', content: 'step {{step}}' } }] } };

/** A first model call that gets a 503 and is retried, then enough steps to continue as new at the lowest history limit. */
const scripts: Record<string, Script> = {
  'retried-then-long': {
    steps: [{ ...write, faults: [{ kind: '503' }] }, { ...write, repeat: 44 }, { reply: { text: 'walked far enough' } }],
  } as Script,
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ scripts });
});
afterAll(async () => h?.stop());

function cli(args: string[]): Promise<CliRun> {
  const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
  return runCli(args, env);
}

interface JsonSpan {
  kind: string;
  step: number;
  name: string;
  startedAt: string;
  endedAt: string | null;
  attempts: number;
  error?: string;
  costUsd?: number;
  execution: number;
}

describe('tether history --timeline', () => {
  let runId: string;
  beforeAll(async () => {
    runId = await h.start({ goal: 'walk', model: 'scripted:retried-then-long', critic: { policy: 'off' }, limits: { maxSteps: 100, maxHistoryEvents: 200 } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'walked far enough' });
  }, 120_000);

  it('gives every span of a continued-as-new run as JSON, the retried model call with its attempts and error', async () => {
    const out = await cli(['history', runId, '--timeline', '--output', 'json']);
    expect(out.code, out.stderr).toBe(0);
    const timeline = JSON.parse(out.stdout.trim().split('\n').pop()!) as { spans: JsonSpan[]; executions: Array<{ end: string }>; curve: unknown[] };
    expect(timeline.executions.length).toBeGreaterThanOrEqual(2);
    expect(timeline.executions.slice(0, -1).every((x) => x.end === 'continued_as_new')).toBe(true);
    expect(timeline.executions.at(-1)!.end).toBe('completed');

    const calls = timeline.spans.filter((s) => s.kind === 'llm');
    expect(calls.map((s) => s.step)).toEqual(Array.from({ length: 46 }, (_, i) => i + 1));
    expect(calls[0]).toMatchObject({ step: 1, attempts: 2 });
    expect(calls[0]!.error).toContain('503');
    expect(calls.slice(1).every((s) => s.attempts === 1 && s.error === undefined)).toBe(true);
    expect(calls.every((s) => (s.costUsd ?? 0) > 0 && s.endedAt !== null)).toBe(true);
    expect(new Set(calls.map((s) => s.execution)).size).toBe(timeline.executions.length);

    const tools = timeline.spans.filter((s) => s.kind === 'tool');
    expect(tools).toHaveLength(45);
    expect(tools.every((s) => s.name.startsWith('write_file'))).toBe(true);
    expect(timeline.curve).toHaveLength(46);
  });

  it('reads only the end of the history for the last steps, across executions, with the costs the whole history gives', async () => {
    const whole = await readChain(h.tc.client, runId);
    const costs = (chain: ExecutionEvents[]) => costPerStep(timelineOf(readRunHistory(runId, chain)).curve);
    const all = costs(whole);
    expect(all).toHaveLength(46);
    for (const calls of [1, 12, 30, 46, 100]) {
      const tail = costs(await readLastModelCalls(h.tc.client, runId, calls));
      const expected = all.slice(-calls);
      expect(tail, `${calls} calls`).toHaveLength(expected.length);
      for (const [i, cost] of tail.entries()) expect(Math.abs(cost - expected[i]!), `${calls} calls, step ${i}`).toBeLessThan(2e-6);
    }
    const [last] = await fetchLastModelCalls(h.tc.client, runId, 1);
    expect(last!.events[0]!.activityTaskScheduledEventAttributes?.activityType?.name).toBe('callModel');
    expect(last!.events.length).toBeLessThan(whole.at(-1)!.events.length);
    expect((await fetchLastModelCalls(h.tc.client, runId, 30)).length).toBeGreaterThanOrEqual(2);
  });

  it('draws the run in the terminal, with a row where it continued as new', async () => {
    const out = await cli(['history', runId, '--timeline']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/llm .*\|\s*█+\s*\|.*2 attempts · error: .*503/);
    expect(out.stdout).toContain('— continued as new: execution 2 of');
  });

  it('refuses a workflow that is not a run, as status does', async () => {
    const handle = await h.tc.client.workflow.start('not-a-run', { taskQueue: `${h.taskQueue}-none`, workflowId: `not-a-run-${Date.now()}` });
    try {
      for (const view of [['--timeline'], ['--timeline', '--output', 'json'], []]) {
        const out = await cli(['history', handle.workflowId, ...view]);
        expect(out.code, view.join(' ')).toBe(1);
        expect(out.stderr + out.stdout).toContain('not a Tether run');
      }
    } finally {
      await handle.terminate('test done');
    }
  });

  it('prints a sparkline of the cost of each step under tether status', async () => {
    const out = await cli(['status', runId]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/cost\/step:\s+[▁▂▃▄▅▆▇█]{46}\s+\(46 steps, max \$/);
  });
});
