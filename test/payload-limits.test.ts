import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlRun, getTranscript, resultFromFailure, TetherError } from '../src/client/runs.js';
import { TetherStateKey } from '../src/api/search-attributes.js';
import type { Script } from '../src/scripted/script.js';
import { runCli } from './helpers/cli-process.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { eventType } from './helpers/history.js';

/**
 * Nothing a user or a model can produce may push a payload past Temporal's
 * 2 MB limit: such a payload fails the activity or, worse, the workflow task,
 * again and again. These runs try, against the real dev server.
 */

const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
const finish = (summary: string) => call('finish', { summary });
// 3 bytes a character in UTF-8: 80 000 of them fill most of a reply's argument budget.
const EUROS = '€'.repeat(80_000);

const scripts: Record<string, Script> = {
  'writes-10mb': { steps: [call('write_file', { path: 'huge.txt', content: 'x'.repeat(10_000_000) }), finish('went on after the refusal')] } as Script,
  'grows-past-limit': {
    steps: [{ ...call('write_file', { path: 'part-{{step}}.txt', content: EUROS }), repeat: 30 }, finish('carried through')],
    // Compaction keeps failing, so only the payload bound keeps the transcript in check.
    compaction: { faults: [{ kind: '400', times: 10_000 }] },
  } as Script,
  quick: { steps: [finish('never runs')] } as Script,
  waits: { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'sleep 300' } }] } } as Script,
  'three-steps': { steps: [call('shell', { command: 'echo 1' }), call('shell', { command: 'echo 2' }), finish('three steps')] } as Script,
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ scripts });
});
afterAll(async () => h?.stop());

const base = { critic: { policy: 'off' as const } };

/** Every execution of the run (continue-as-new makes several), with its history's event types, each read whole as any client reads it. */
async function executions(runId: string): Promise<Array<{ status: string; events: string[] }>> {
  const out: Array<{ status: string; events: string[] }> = [];
  for await (const info of h.tc.client.workflow.list({ query: `WorkflowId = '${runId}'` })) {
    const history = await h.tc.client.workflow.getHandle(runId, info.runId).fetchHistory();
    out.push({ status: info.status.name, events: (history.events ?? []).map(eventType) });
  }
  return out;
}

describe('payloads stay under Temporal limits', () => {
  it('refuses a 10 MB write_file from the model with a clear tool error, and the run goes on', async () => {
    const runId = await h.start({ ...base, goal: 'write a huge file', model: 'scripted:writes-10mb' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'went on after the refusal' });
    const tool = (await getTranscript(h.tc, runId)).find((m) => m.role === 'tool');
    expect(tool).toMatchObject({ success: false, content: expect.stringMatching(/arguments too large \(9\.5 MiB\).*write a large file in parts/i) });
    const [only] = await executions(runId);
    expect(only!.events).not.toContain('EVENT_TYPE_WORKFLOW_TASK_FAILED');
    expect(only!.events).not.toContain('EVENT_TYPE_ACTIVITY_TASK_FAILED');
  });

  it('refuses a RunSpec over the limits with a validation error naming the problem', async () => {
    const tooBigContext = h.start({ ...base, goal: 'g', model: 'scripted:quick', limits: { maxContextChars: 50_000_000 } });
    await expect(tooBigContext).rejects.toThrow(TetherError);
    await expect(tooBigContext).rejects.toThrow(/invalid RunSpec: limits\.maxContextChars: .*500000/);
    const big = '€'.repeat(150_000);
    await expect(h.start({ ...base, goal: big, system: big, model: 'scripted:quick' })).rejects.toThrow(/RunSpec is \d+ KiB as JSON; at most 512 KiB/);
  });

  it('refuses the same spec when it is started straight through Temporal, failing the run rather than its workflow task', async () => {
    const big = '€'.repeat(150_000);
    const handle = await h.tc.client.workflow.start('agentRun', {
      taskQueue: h.taskQueue,
      workflowId: `raw-big-${Date.now()}`,
      args: [{ ...base, goal: big, system: big, model: 'scripted:quick' }],
    });
    const failed = await handle.result().catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    expect((failed as WorkflowFailedError).cause?.message).toMatch(/invalid RunSpec: the RunSpec is \d+ KiB/);
    const [only] = await executions(handle.workflowId);
    expect(only!.events).not.toContain('EVENT_TYPE_WORKFLOW_TASK_FAILED');
  });

  it('applies a kill sent while a raw client’s Update over the limit holds the run up, and the run is not lost to it', async () => {
    const runId = await h.start({ ...base, goal: 'wait', model: 'scripted:waits', limits: { maxRuntime: '10m' } });
    await h.until(runId, (s) => s.lastTool === 'shell');
    // The SDK's rejection carries the 2.1 MB request back, over the namespace's 2 MB blob limit: the workflow
    // tasks that hold it fail (with every Update in them) until the server drops it, some 20 s on a quiet machine.
    // Tether's client sends its kill again for 40 s; on a loaded one the failing can outlast that, and the kill
    // is then sent as a Signal, which the run applies once a task succeeds, and says so.
    const oversized = h.tc.client.workflow.getHandle(runId).executeUpdate('steer', { args: [{ message: 'S'.repeat(2_100_000) }] });
    const reason = 'sent alongside an oversized steer';
    const kill = controlRun(h.tc, runId, 'kill', { reason }).catch((err: Error) => {
      expect(err.message).toMatch(/its workflow task keeps failing\), so the kill was sent as a Signal/);
      return { runId };
    });
    // The oversized Update never applies: refused once its task fails, or left unanswered past the call's deadline.
    await expect(oversized).rejects.toMatchObject({ cause: { details: expect.stringMatching(/Workflow Task in failed state|context deadline exceeded/) } });
    expect(await kill).toMatchObject({ runId });
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: expect.stringContaining(reason) });
    expect((await h.status(runId)).audit?.filter((e) => e.action === 'steer')).toEqual([]);
  }, 90_000);

  it('refuses a relative workspace from a raw start: it would be the worker’s working directory', async () => {
    const handle = await h.tc.client.workflow.start('agentRun', {
      taskQueue: h.taskQueue,
      workflowId: `raw-relative-${Date.now()}`,
      args: [{ ...base, goal: 'g', model: 'scripted:quick', workspace: 'relative/dir' }],
    });
    const failed = await handle.result().catch((err: unknown) => err);
    const cause = 'invalid RunSpec: workspace "relative/dir" must be an absolute path on the worker';
    // As every ending but completed: the state as the failure's type, the RunResult as its details, the state in visibility.
    expect((failed as WorkflowFailedError).cause).toMatchObject({ type: 'failed', message: cause });
    expect(resultFromFailure(failed, handle.workflowId)).toEqual({
      runId: handle.workflowId,
      status: 'failed',
      steps: 0,
      costUsd: 0,
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      cause,
    });
    expect((await handle.describe()).typedSearchAttributes.get(TetherStateKey)).toBe('failed');
    const [only] = await executions(handle.workflowId);
    expect(only!.events).not.toContain('EVENT_TYPE_WORKFLOW_TASK_FAILED');
  });

  it('sends a long system prompt once per transcript, not with every model call', async () => {
    const system = `Be careful. ${'Long instructions. '.repeat(10_000)}`;
    const runId = await h.start({ ...base, goal: 'three steps', model: 'scripted:three-steps', system });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'three steps' });
    const inputs = ((await h.tc.client.workflow.getHandle(runId).fetchHistory()).events ?? []).flatMap((e) => {
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name !== 'callModel') return [];
      return [JSON.parse(Buffer.from(scheduled.input!.payloads![0]!.data!).toString('utf8')) as { system?: string }];
    });
    expect(inputs).toHaveLength(3);
    expect(inputs.map((i) => i.system === system)).toEqual([true, false, false]);
    // The model still saw the system prompt at every step: the worker kept it.
    const requests = h.scripted.requestsFor(runId);
    expect(requests).toHaveLength(3);
    for (const r of requests) expect(JSON.stringify(r.body)).toContain('Long instructions. Long instructions.');
  });

  it('carries a transcript that outgrew the payload limit through continue-as-new, shortened, and finishes', async () => {
    const runId = await h.start({
      ...base,
      goal: 'write many large files',
      model: 'scripted:grows-past-limit',
      limits: { maxSteps: 40, maxHistoryEvents: 200, maxContextChars: 100_000 },
    });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'carried through', steps: 31 });
    const runs = await executions(runId);
    expect(runs.length).toBeGreaterThan(1);
    expect(runs.filter((r) => r.status === 'CONTINUED_AS_NEW').length).toBe(runs.length - 1);
    for (const run of runs) expect(run.events).not.toContain('EVENT_TYPE_WORKFLOW_TASK_FAILED');
    // 30 writes of 240 KB each went through the run: far more than a payload holds, so it was shortened.
    expect((await h.status(runId)).warnings.join('\n')).toMatch(/transcript outgrew 1\.0 MiB and was shortened/);
    // Each execution's history is one page of several MiB, past gRPC's default 4 MiB for an answer: the CLI reads it whole.
    const history = await runCli(['history', runId], { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue });
    expect(history.stderr).toBe('');
    expect(history.code).toBe(0);
    expect(history.stdout).toMatch(/write_file/);
  }, 240_000);
});
