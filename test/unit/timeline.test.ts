import { readFile } from 'node:fs/promises';
import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { describe, expect, it } from 'vitest';
import { sparkline } from '../../src/cli/sparkline.js';
import { bar } from '../../src/cli/timeline-view.js';
import { decodeEvent } from '../../src/history/decode.js';
import { type ActivityRecord, type RunHistory, readRunHistory } from '../../src/history/run-history.js';
import { costPerStep, type Span, type Timeline, timelineOf } from '../../src/history/timeline.js';

const DIR = new URL('../fixtures/histories/', import.meta.url);

/** Recorded fixture histories as the executions of one run, decoded as `tether history` decodes a live one. */
async function recorded(...files: string[]) {
  const converter = loadDataConverter();
  return Promise.all(
    files.map(async (file, i) => {
      const history = historyFromJSON(JSON.parse(await readFile(new URL(file, DIR), 'utf8')));
      return { executionId: `exec-${i + 1}`, events: await Promise.all((history.events ?? []).map((e) => decodeEvent(converter, e))) };
    }),
  );
}

async function timeline(...files: string[]): Promise<Timeline> {
  return timelineOf(readRunHistory('run-1', await recorded(...files)));
}

/** A recorded history's event, as JSON edited in place. */
type RawMarker = any;
const markerJson = (e: RawMarker) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes.details.data.payloads[0].data, 'base64').toString());

const ofKind = (t: Timeline, kind: Span['kind']) => t.spans.filter((s) => s.kind === kind);

describe('timeline of a recorded run', () => {
  it('shows a retried model call with its attempts and the error of the failed one', async () => {
    const t = await timeline('retries.json');
    const [call] = ofKind(t, 'llm');
    expect(call).toMatchObject({ step: 1, attempts: 2, outcome: 'completed', name: 'callModel scripted:retries step 1' });
    expect(call!.error).toContain('503');
    expect(call!.costUsd).toBeGreaterThan(0);
    expect(call!.tokens!.input).toBeGreaterThan(0);
    expect(Date.parse(call!.endedAt!)).toBeGreaterThanOrEqual(Date.parse(call!.startedAt));
  });

  it('times a local file tool from when it was scheduled, though it spanned several workflow tasks', async () => {
    const raw = JSON.parse(await readFile(new URL('local-files-every-tool.json', DIR), 'utf8'));
    const marker = raw.events.find(
      (e: RawMarker) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity' && markerJson(e).activity_type === 'runFileToolHere',
    );
    const data = markerJson(marker);
    // As if the write had taken 9 s more: the SDK heartbeats the workflow task meanwhile, so a later task started before the marker.
    data.original_schedule_time.seconds -= 9;
    marker.markerRecordedEventAttributes.details.data.payloads[0].data = Buffer.from(JSON.stringify(data)).toString('base64');
    const events = await Promise.all((historyFromJSON(raw).events ?? []).map((e) => decodeEvent(loadDataConverter(), e)));
    const [write] = ofKind(timelineOf(readRunHistory('run-1', [{ executionId: 'exec-1', events }])), 'tool');
    expect(write!.name).toMatch(/^write_file/);
    expect(Date.parse(write!.startedAt)).toBe(data.original_schedule_time.seconds * 1000 + Math.floor(data.original_schedule_time.nanos / 1e6));
    expect(Date.parse(write!.endedAt!) - Date.parse(write!.startedAt)).toBeGreaterThanOrEqual(9_000);
  });

  it('draws an emergency stop as a pause between the step it stopped at and the one after the clear', async () => {
    const t = await timeline('fails-then-clear.json');
    const [pause] = ofKind(t, 'pause');
    expect(pause).toMatchObject({ name: 'emergency stop', step: 2, outcome: 'resumed', attempts: 1 });
    const step3 = ofKind(t, 'llm').find((s) => s.step === 3)!;
    expect(pause!.endedAt! <= step3.startedAt).toBe(true);
    expect(
      ofKind(t, 'tool')
        .filter((s) => s.step === 2)
        .every((s) => s.startedAt <= pause!.startedAt),
    ).toBe(true);
  });

  it("draws a delegate call as a tool span with its sub-agent's cost, on the curve too, and the sub-agent's held call as the parent's pause", async () => {
    const executions = await recorded('s20-delegate-approval.json');
    const t = timelineOf(readRunHistory('run-1', executions));
    const [delegated] = ofKind(t, 'tool');
    expect(delegated).toMatchObject({ step: 1, outcome: 'completed', name: 'delegate: sub-agent s20-delegate-approval.delegate-1-approval_0_0' });
    expect(delegated!.costUsd).toBeGreaterThan(0);
    expect(ofKind(t, 'pause').map((s) => [s.name, s.outcome])).toEqual([['tool approval: waiting for a decision', 'resumed']]);
    const closed = executions[0]!.events.find((e) => e.kind === 'workflow_closed') as { result?: { costUsd: number } };
    expect(t.curve.at(-1)!.costUsd).toBeCloseTo(closed.result!.costUsd, 6);
    const models = ofKind(t, 'llm').reduce((sum, s) => sum + (s.costUsd ?? 0), 0);
    expect(t.curve.at(-1)!.costUsd).toBeCloseTo(models + delegated!.costUsd!, 6);
  });

  it("ends a delegate call at its sub-agent's emergency stop, with the cost it reported, on the curve too; the sub-agent stays stopped", async () => {
    const [execution] = await recorded('s20-delegate-approval.json');
    const started = execution!.events.find((e) => e.kind === 'child_started')!;
    const closedAt = execution!.events.findIndex((e) => e.kind === 'child_closed');
    const childId = 's20-delegate-approval.delegate-1-approval_0_0';
    const report = { ...started, kind: 'signal', name: 'childEmergency', payload: { childId, reason: '3 errors in a row', costUsd: 0.25 }, identity: null };
    // The report comes in place of the child's end: a stopped sub-agent does not end while the run goes on.
    execution!.events.splice(closedAt, 1, { ...report, at: started.at + 1_000 } as (typeof execution.events)[number]);
    const t = timelineOf(readRunHistory('run-1', [execution!]));
    const [delegated] = ofKind(t, 'tool');
    expect(delegated).toMatchObject({
      outcome: 'failed',
      error: 'the sub-agent tripped its emergency stop: 3 errors in a row',
      costUsd: 0.25,
      endedAt: new Date(started.at + 1_000).toISOString(),
    });
    const models = ofKind(t, 'llm').reduce((sum, s) => sum + (s.costUsd ?? 0), 0);
    expect(t.curve.at(-1)!.costUsd).toBeCloseTo(models + 0.25, 6);
  });

  it('ends a delegate call whose sub-agent was still running with the run that ran it, saying how the run ended', async () => {
    const [execution] = await recorded('s20-delegate-approval.json');
    execution!.events = execution!.events.filter((e) => e.kind !== 'child_closed');
    const run = readRunHistory('run-1', [execution!]);
    Object.assign(run.executions[0]!, { end: 'terminated', failureType: undefined });
    const [delegated] = ofKind(timelineOf(run), 'tool');
    expect(delegated).toMatchObject({
      outcome: 'cancelled',
      error: 'the run ended killed while its sub-agent ran',
      endedAt: new Date(run.executions[0]!.endedAt!).toISOString(),
    });
    expect(delegated!.costUsd).toBeUndefined();
  });

  it("says how each execution ended in the run's words, as status and the lists do: killed, not failed; a terminate is a kill", async () => {
    expect((await timeline('killed.json')).executions.map((x) => x.end)).toEqual(['killed']);
    expect((await timeline('asks.json')).executions.map((x) => x.end)).toEqual(['completed']);
    const run = readRunHistory('run-1', await recorded('asks.json', 'killed.json', 'retries.json'));
    Object.assign(run.executions[0]!, { end: 'continued_as_new' });
    Object.assign(run.executions[1]!, { end: 'terminated', failureType: undefined });
    Object.assign(run.executions[2]!, { end: 'timed_out' });
    expect(timelineOf(run).executions.map((x) => x.end)).toEqual(['continued_as_new', 'killed', 'timeout']);
  });

  it('draws a question and each held tool call as pauses', async () => {
    expect(ofKind(await timeline('asks.json'), 'pause').map((s) => s.name)).toEqual(['question: waiting for an answer']);
    const gated = ofKind(await timeline('gated-approvals.json'), 'pause');
    expect(gated.map((s) => s.name)).toEqual(Array(3).fill('tool approval: waiting for a decision'));
    expect(gated.every((s) => s.endedAt !== null && s.outcome === 'resumed')).toBe(true);
  });

  it('names tools, verification and compaction by their activity summaries, each at its step', async () => {
    const verify = await timeline('bound-verify-fix.json');
    expect(ofKind(verify, 'verify').map((s) => [s.step, s.name])).toEqual([
      [2, 'verify attempt 1: grep -q yes ok.txt'],
      [4, 'verify attempt 2: grep -q yes ok.txt'],
    ]);
    const compacts = await timeline('bound-compacts.json');
    expect(ofKind(compacts, 'compaction').map((s) => s.step)).toEqual([2, 3]);
    expect(ofKind(compacts, 'compaction').every((s) => typeof s.costUsd === 'number')).toBe(true);
    expect(ofKind(await timeline('gated-approvals.json'), 'tool').map((s) => s.name)).toContain('shell: echo a > a.txt');
  });

  it('shows file tools run as local activities like any tool call, each at its step and within it', async () => {
    const t = await timeline('local-files-every-tool.json');
    const tools = ofKind(t, 'tool');
    expect(tools.map((s) => [s.step, s.name, s.outcome])).toEqual([
      [1, 'write_file a.txt (1 chars)', 'completed'],
      [2, 'read_file a.txt', 'completed'],
      [3, 'shell: cat a.txt', 'completed'],
    ]);
    for (const tool of tools) {
      const model = ofKind(t, 'llm').find((s) => s.step === tool.step)!;
      expect(tool.startedAt >= model.endedAt!).toBe(true);
    }
  });

  it('marks a tool call that failed as failed, with its output as the error', async () => {
    const tools = ofKind(await timeline('fails-then-clear.json'), 'tool');
    expect(tools.map((s) => s.outcome)).toEqual(['failed', 'failed']);
    expect(tools.every((s) => s.error !== undefined && s.attempts === 1)).toBe(true);
  });

  it('draws the critic child’s decisions as critic spans at the step the run was at', async () => {
    const run = readRunHistory('run-1', await recorded('fails-then-clear.json'));
    const step2 = timelineOf(run).spans.find((s) => s.kind === 'llm' && s.step === 2)!;
    const at = Date.parse(step2.startedAt) + 1;
    const decision: ActivityRecord = {
      execution: 0,
      activityType: 'criticDecide',
      summary: 'criticDecide openai:m: idle 120s after step 2',
      input: {},
      result: { action: 'extend', costUsd: 0.002 },
      scheduledAt: at,
      startedAt: at,
      endedAt: at + 500,
      attempts: 1,
      errors: [],
      outcome: 'completed',
    };
    const critic: RunHistory = { runId: 'run-1-critic', executions: [], activities: [decision], controls: [], children: [], states: [], cancelRequest: null };
    const [span] = ofKind(timelineOf(run, [critic]), 'critic');
    expect(span).toMatchObject({ step: 2, name: 'criticDecide openai:m: idle 120s after step 2', costUsd: 0.002, outcome: 'completed' });
    // A decision the model could not give (an error, an answer that does not read) is answered as a value: it failed.
    const unusable: RunHistory = { ...critic, activities: [{ ...decision, result: { decision: null, costUsd: 0.001, error: 'unusable answer: maybe' } }] };
    expect(ofKind(timelineOf(run, [unusable]), 'critic')[0]).toMatchObject({ outcome: 'failed', error: 'unusable answer: maybe', costUsd: 0.001 });
  });

  it('keeps every execution of a chain, each span marked with the execution it ran in', async () => {
    const t = await timeline('retries.json', 'fails-then-clear.json');
    expect(t.executions.map((x) => x.executionId)).toEqual(['exec-1', 'exec-2']);
    expect(new Set(t.spans.map((s) => s.execution))).toEqual(new Set([0, 1]));
    expect(t.spans.map((s) => s.startedAt)).toEqual(t.spans.map((s) => s.startedAt).sort());
  });

  it('gives no cost to a model call that has not answered, and no point on the curve for its step', async () => {
    const run = readRunHistory('run-1', await recorded('bound-compacts.json'));
    const last = run.activities.filter((a) => a.activityType === 'callModel').at(-1)!;
    Object.assign(last, { outcome: 'running', endedAt: null, result: undefined });
    const t = timelineOf(run);
    const open = ofKind(t, 'llm').find((s) => s.outcome === 'running')!;
    expect([open.costUsd, open.tokens]).toEqual([undefined, undefined]);
    expect(t.curve.map((p) => p.step)).not.toContain(open.step);
  });

  it('says a pause was covered by another, not resumed, when an emergency stop came while the budget waited', () => {
    const at = Date.parse('2026-01-01T00:00:00Z');
    const states = ['awaiting_approval', 'emergency_stopped', 'awaiting_approval', 'running'].map((state, i) => ({ execution: 0, at: at + i * 1_000, state }));
    const run: RunHistory = {
      runId: 'run-1',
      executions: [{ executionId: 'e1', startedAt: at, endedAt: null, end: 'running' }],
      activities: [],
      controls: [],
      children: [],
      states,
      cancelRequest: null,
    };
    expect(ofKind(timelineOf(run), 'pause').map((p) => [p.name, p.outcome])).toEqual([
      ['budget: waiting for approval', 'emergency_stopped'],
      ['emergency stop', 'awaiting_approval'],
      ['budget: waiting for approval', 'resumed'],
    ]);
  });

  it('adds cost and tokens up step by step, compaction included', async () => {
    const t = await timeline('bound-compacts.json');
    expect(t.curve.map((p) => p.step)).toEqual([1, 2, 3, 4]);
    for (const [i, p] of t.curve.entries()) if (i) expect(p.costUsd).toBeGreaterThanOrEqual(t.curve[i - 1]!.costUsd);
    const spent = t.spans.reduce((sum, s) => sum + (s.costUsd ?? 0), 0);
    expect(t.curve.at(-1)!.costUsd).toBeCloseTo(spent, 6);
    expect(costPerStep(t.curve).reduce((a, b) => a + b, 0)).toBeCloseTo(spent, 6);
  });
});

describe('terminal bars', () => {
  const span = (startedAt: number, endedAt: number | null, kind: Span['kind'] = 'llm') =>
    ({ kind, startedAt: new Date(startedAt).toISOString(), endedAt: endedAt === null ? null : new Date(endedAt).toISOString() }) as Span;

  it('places a span on the run’s time line, work as █ and waiting as ░', () => {
    expect(bar(span(0, 50), 0, 100, 10)).toBe('█████     ');
    expect(bar(span(50, 100, 'pause'), 0, 100, 10)).toBe('     ░░░░░');
  });

  it('gives a very short span one cell, and a span still going runs to the end', () => {
    expect(bar(span(99, 100), 0, 100, 10)).toBe('         █');
    expect(bar(span(20, null), 0, 100, 10)).toBe('  ████████');
  });
});

describe('sparkline', () => {
  it('scales values to eight bars, the largest a full block', () => {
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7])).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline([1, 1, 1])).toBe('███');
  });

  it('shows nothing spent as the lowest bar, and only the last steps of a long run', () => {
    expect(sparkline([0, 0])).toBe('▁▁');
    expect(sparkline([9, 0, 1], 2)).toBe('▁█');
    expect(sparkline([])).toBe('');
  });
});
