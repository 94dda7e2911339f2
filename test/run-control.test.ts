import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlSignals, emergencyStateQuery } from '../src/api/messages.js';
import { TetherEmergencyStopKey, TetherStateKey } from '../src/api/search-attributes.js';
import { readRunStatus } from '../src/client/run-status.js';
import { readTimeline } from '../src/history/read-timeline.js';
import { controlRun, getStatus, getTranscript, TetherError } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { eventually } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { eventTypes, scheduledActivities, settled, signalsReceived } from './helpers/history.js';
import { processesWith, uniqueSleep, waitForProcesses } from './helpers/processes.js';

const call = (name: string, args: Record<string, unknown>) => ({ name, args });
const tools = (...calls: Array<{ name: string; args: Record<string, unknown> }>) => ({ reply: { toolCalls: calls } });
const shell = (command: string) => tools(call('shell', { command }));

// Tools run in their own PID namespace: the hanging one is found by its command line, not by a pid it prints.
const HANGING = uniqueSleep();
const CHILD_HANGING = uniqueSleep();

const scripts: Record<string, Script> = {
  'slow-then-finish': { steps: [shell('sleep 2'), tools(call('finish', { summary: 'done' }))] } as Script,
  'sleepy-loop': { steps: [], after: { toolCalls: [call('shell', { command: 'sleep 1' })] } } as Script,
  // Output that differs every step keeps the stuck detector quiet; steps this fast race every Update.
  'busy-loop': { steps: [], after: { toolCalls: [call('shell', { command: 'mktemp -u -p . XXXXXX' })] } } as Script,
  'hang-tool': { steps: [shell(`sleep ${HANGING}`)] } as Script,
  'hang-llm': { steps: [{ reply: { text: 'never' }, faults: [{ kind: 'hang' }] }] } as Script,
  'always-fails': { steps: [], after: { toolCalls: [call('shell', { command: 'echo nope; exit 3' })] } } as Script,
  'fail-succeed-fail': {
    steps: [shell('exit 1'), shell('exit 1'), shell('true'), shell('exit 1'), shell('exit 1'), tools(call('finish', { summary: 'survived' }))],
  } as Script,
  'fails-then-finishes': {
    steps: [shell('exit 1'), shell('exit 1'), shell('true'), tools(call('finish', { summary: 'resumed' }))],
  } as Script,
  delegator: {
    steps: [tools(call('delegate', { goal: 'sub task', model: 'scripted:always-fails' })), tools(call('finish', { summary: 'parent done' }))],
  } as Script,
  // The first reply finishes, slowly: a steer sent while it streams must still reach the model.
  'finishes-slowly': {
    steps: [{ ...tools(call('finish', { summary: 'finished unsteered' })), delayMs: 2_000 }, tools(call('finish', { summary: 'finished after the steer' }))],
  } as Script,
  // A reply that takes 800 ms: an emergency stop sent meanwhile may reach the worker only after the reply came.
  'slow-reply': { steps: [{ ...tools(call('finish', { summary: 'done after the clear' })), delayMs: 800 }] } as Script,
  'delegate-hang': { steps: [tools(call('delegate', { goal: 'hang', model: 'scripted:hang-tool' }))] } as Script,
  'child-hangs-twice': { steps: [shell(`sleep ${CHILD_HANGING}`), shell(`sleep ${CHILD_HANGING}`)] } as Script,
  'delegates-to-doomed': {
    steps: [tools(call('delegate', { goal: 'doomed', model: 'scripted:child-hangs-twice' })), tools(call('finish', { summary: 'went on without the child' }))],
  } as Script,
  'delegate-hangs-twice': { steps: [tools(call('delegate', { goal: 'hang twice', model: 'scripted:child-hangs-twice' }))] } as Script,
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ scripts });
});
afterAll(async () => h?.stop());

const base = { critic: { policy: 'off' as const } };

async function failureType(runId: string): Promise<string | undefined> {
  try {
    await h.tc.client.workflow.getHandle(runId).result();
    return 'completed';
  } catch (err) {
    if (err instanceof WorkflowFailedError) return err.cause instanceof ApplicationFailure ? (err.cause.type ?? undefined) : err.cause?.name;
    throw err;
  }
}

describe('steer and extend', () => {
  it('delivers steers to the next LLM request, in order', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:slow-then-finish' });
    await h.until(runId, (s) => s.lastTool === 'shell');
    await controlRun(h.tc, runId, 'steer', { message: 'first nudge' });
    await controlRun(h.tc, runId, 'steer', { message: 'second nudge' });
    await h.result(runId);
    const next = h.scripted.requestsFor(runId).find((r) => r.step === 1)!;
    const users = (next.body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'user').map((m) => m.content);
    expect(users.slice(-2)).toEqual(['first nudge', 'second nudge']);
  });

  it('lets the model read a steer sent while its finishing reply was on the way, before the run ends', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:finishes-slowly' });
    await eventually('the first model call', () => h.scripted.requestsFor(runId).length);
    await controlRun(h.tc, runId, 'steer', { message: 'report the numbers before you finish' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'finished after the steer' });
    const second = h.scripted.requestsFor(runId).find((r) => r.step === 1)!;
    const messages = JSON.stringify(second.body.messages);
    expect(messages).toContain('an operator sent a message while you were replying');
    expect(messages).toContain('report the numbers before you finish');
  });

  it('lets a run pass its original step ceiling and deadline once extended', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:sleepy-loop', limits: { maxSteps: 2, maxRuntime: '4s' } });
    const status = await controlRun(h.tc, runId, 'extend', { by: '20s', steps: 3 });
    expect(status.maxSteps).toBe(5);
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'failed', cause: 'maxSteps reached (5)', steps: 5 });
  });
});

describe('kill, timeout and cancel', () => {
  it('kills a run during a hanging tool: ends killed with the reason and the process is gone', async () => {
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-kill-'));
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:hang-tool', workspace });
    await h.until(runId, (s) => s.lastTool === 'shell');
    await waitForProcesses(HANGING);
    const status = await controlRun(h.tc, runId, 'kill', { reason: 'operator pulled the plug' });
    expect(status.state).toBe('killed');
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: 'operator pulled the plug' });
    expect(processesWith(HANGING)).toEqual([]);
    await expect(controlRun(h.tc, runId, 'steer', { message: 'too late' })).rejects.toThrow(/already ended|completed/);
  });

  it('kills a run while its LLM call is in flight', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:hang-llm' });
    await eventually('the model call to reach the provider', () => h.scripted.requestsFor(runId).length);
    await controlRun(h.tc, runId, 'kill', { reason: 'stop thinking' });
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: 'stop thinking' });
    // The kill is answered by a workflow task that does not also close the run: the server turns back a
    // closing task when an event (the abandoned model call's end) arrives meanwhile, and drops its answers.
    const types = await eventTypes(h.tc.client.workflow.getHandle(runId));
    const answered = types.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED');
    expect(answered).toBeGreaterThan(-1);
    expect(types.lastIndexOf('EVENT_TYPE_WORKFLOW_TASK_STARTED')).toBeGreaterThan(answered);
  });

  it('lands every kill Update on a busy run, even when its workflow task races a finishing activity', async () => {
    // About one kill in ten arrives as a step ends; the server drops that Update and the client must resend it.
    for (let i = 0; i < 20; i++) {
      const runId = await h.start({ ...base, goal: 'x', model: 'scripted:busy-loop', limits: { maxSteps: 100_000 } });
      await sleep(200 + ((i * 37) % 200));
      expect((await controlRun(h.tc, runId, 'kill', { reason: `kill ${i}` })).state).toBe('killed');
      expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: `kill ${i}` });
    }
  }, 120_000);

  it('keeps timeout, kill and cancel distinct in result, failure type and search attribute', async () => {
    const timedOut = await h.start({ ...base, goal: 'x', model: 'scripted:hang-tool', limits: { maxRuntime: '2s' } });
    const killed = await h.start({ ...base, goal: 'x', model: 'scripted:hang-tool' });
    const cancelled = await h.start({ ...base, goal: 'x', model: 'scripted:hang-tool' });
    await h.until(killed, (s) => s.lastTool === 'shell');
    await h.until(cancelled, (s) => s.lastTool === 'shell');
    await controlRun(h.tc, killed, 'kill', { reason: 'k' });
    await h.tc.client.workflow.getHandle(cancelled).cancel();
    expect((await h.result(timedOut)).status).toBe('timeout');
    expect((await h.result(killed)).status).toBe('killed');
    expect((await h.result(cancelled)).status).toBe('cancelled');
    expect(await failureType(timedOut)).toBe('timeout');
    expect(await failureType(killed)).toBe('killed');
    expect(await failureType(cancelled)).toBe('CancelledFailure');
    for (const [id, state] of [
      [timedOut, 'timeout'],
      [killed, 'killed'],
      [cancelled, 'cancelled'],
    ]) {
      const description = await h.tc.client.workflow.getHandle(id).describe();
      expect(description.typedSearchAttributes.get(TetherStateKey)).toBe(state);
    }
  });
});

describe('the safety system', () => {
  it('trips the emergency stop after five failed tools and then makes no more calls', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:always-fails' });
    const status = await h.until(runId, (s) => s.state === 'emergency_stopped');
    expect(status.emergencyStop.active).toBe(true);
    expect(status.emergencyStop.reason).toMatch(/Maximum consecutive errors reached \(5\)/);
    expect(await h.tc.client.workflow.getHandle(runId).query(emergencyStateQuery)).toEqual({
      emergency_stop: true,
      consecutive_errors: 5,
      max_consecutive_errors: 5,
    });
    // Settled, with nothing pending, a stopped run can make no call until someone acts: its history is final.
    const handle = h.tc.client.workflow.getHandle(runId);
    await settled(handle);
    const calls = (await scheduledActivities(handle)).filter((type) => type === 'callModel');
    expect(calls).toHaveLength(5);
    expect(h.scripted.requestsFor(runId)).toHaveLength(5);
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(TetherEmergencyStopKey)).toBe(true);
    // Killed while stopped, it waits for no clear: `TetherEmergencyStop = true` must not list it any more.
    await controlRun(h.tc, runId, 'kill', { reason: 'cleanup' });
    expect(await h.result(runId)).toMatchObject({ status: 'killed' });
    expect((await handle.describe()).typedSearchAttributes.get(TetherEmergencyStopKey)).toBe(false);
  });

  it('resets the count on a success in between', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:fail-succeed-fail', limits: { maxConsecutiveErrors: 3 } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'survived' });
  });

  it('resumes after clear with the count back at zero', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:fails-then-finishes', limits: { maxConsecutiveErrors: 2 } });
    await h.until(runId, (s) => s.state === 'emergency_stopped');
    await expect(controlRun(h.tc, runId, 'emergencyStop', { reason: 'again' })).rejects.toThrow('Emergency stop is already active');
    const cleared = await controlRun(h.tc, runId, 'clearEmergency', {});
    expect(cleared).toMatchObject({ state: 'running', consecutiveErrors: 0, emergencyStop: { active: false } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'resumed' });
    await expect(controlRun(h.tc, runId, 'clearEmergency', {})).rejects.toThrow(/already ended|completed/);
  });

  it("counts what a model reply cost when it came after an emergency stop cut its call, as the run's history does", async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:slow-reply' });
    const handle = h.tc.client.workflow.getHandle(runId);
    const modelCalls = async () => ((await handle.describe()).raw.pendingActivities ?? []).filter((a) => a.activityType?.name === 'callModel');
    await eventually('the model call to start', modelCalls, (calls) => calls.some((c) => Number(c.state) === 2));
    // The stop lands while the call waits for its reply: the reply may still come before the cancel reaches the worker.
    await sleep(300);
    await controlRun(h.tc, runId, 'emergencyStop', { reason: 'look first' });
    await eventually('the cut call to end, answered or cancelled', modelCalls, (calls) => calls.length === 0);
    const stopped = await getStatus(h.tc, runId);
    expect(stopped.state).toBe('emergency_stopped');
    expect(stopped.costUsd).toBeCloseTo((await readTimeline(h.tc.client, runId)).curve.at(-1)?.costUsd ?? 0, 6);
    await controlRun(h.tc, runId, 'clearEmergency', {});
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'done after the clear' });
    const curve = (await readTimeline(h.tc.client, runId)).curve.at(-1)!;
    expect(result.costUsd).toBeCloseTo(curve.costUsd, 6);
    expect(result.usage.outputTokens).toBe(curve.outputTokens);
  });

  it('trips by hand and refuses to clear a stop that is not active', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:sleepy-loop' });
    await expect(controlRun(h.tc, runId, 'clearEmergency', {})).rejects.toThrow('Emergency stop is not active');
    const stopped = await controlRun(h.tc, runId, 'emergencyStop', { reason: 'looks wrong' });
    expect(stopped.emergencyStop).toMatchObject({ active: true, reason: 'looks wrong' });
    const first = await h.until(runId, (s) => s.state === 'emergency_stopped');
    // The pause uses none of the run's time: its deadline moves on with the clock while it waits, queried or not.
    await sleep(1_500);
    const later = await getStatus(h.tc, runId);
    expect(Date.parse(later.deadline) - Date.parse(first.deadline)).toBeGreaterThanOrEqual(1_000);
    await controlRun(h.tc, runId, 'kill', { reason: 'cleanup' });
  });

  it('stops a run on an emergencyStop Signal whose reason is missing or too long, or that has no payload or extra fields, rather than drop the stop', async () => {
    for (const [payload, reason] of [
      [{}, 'emergency stop (no reason given)'],
      [{ reason: 'r'.repeat(20_000) }, `${'r'.repeat(1_999)}…`],
      // The Temporal UI's bare "Signal" button and `temporal workflow signal` without --input send no payload.
      [undefined, 'emergency stop (no reason given)'],
      [null, 'emergency stop (no reason given)'],
      ['stop', 'emergency stop (no reason given)'],
      [{ reason: 'with extra', force: true }, 'with extra'],
    ] as const) {
      const runId = await h.start({ ...base, goal: 'x', model: 'scripted:sleepy-loop' });
      await h.tc.client.workflow.getHandle(runId).signal(controlSignals.emergencyStop, payload as never);
      const stopped = await h.until(runId, (s) => s.state === 'emergency_stopped');
      expect(stopped.emergencyStop.reason).toBe(reason);
      await controlRun(h.tc, runId, 'kill', { reason: 'cleanup' });
    }
  });

  it('rejects bad Updates with the validator message and ignores bad signals without failing a task', async () => {
    const runId = await h.start({ ...base, goal: 'x', model: 'scripted:sleepy-loop' });
    const rejects = async (name: Parameters<typeof controlRun>[2], payload: unknown, message: RegExp) => {
      const err = await controlRun(h.tc, runId, name, payload).catch((e) => e);
      expect(err).toBeInstanceOf(TetherError);
      expect(err.message).toMatch(message);
    };
    await rejects('steer', { message: '' }, /steer message must not be empty/);
    await rejects('extend', { by: '-5m' }, /invalid duration|between/);
    await rejects('extend', { steps: 10_000_000 }, /at most/);
    await rejects('extend', {}, /needs "by"/);
    await rejects('kill', { reason: 'x', force: true }, /force/);
    await rejects('approve', { addBudgetUsd: 5 }, /not awaiting budget approval/);
    await rejects('answer', { text: 'hi' }, /not waiting for an answer/);
    const handle = h.tc.client.workflow.getHandle(runId);
    await handle.signal(controlSignals.steer, { message: '' });
    await handle.signal(controlSignals.extend, 'garbage' as never);
    await handle.signal(controlSignals.kill, {} as never);
    // The three signals are in the history and a workflow task after them has completed: each was handled.
    await eventually('the bad signals to be handled', async () => {
      const types = await eventTypes(handle);
      return (
        (await signalsReceived(handle)).length === 3 &&
        types.lastIndexOf('EVENT_TYPE_WORKFLOW_TASK_COMPLETED') > types.lastIndexOf('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED')
      );
    });
    expect((await h.status(runId)).state).toBe('running');
    expect(await eventTypes(handle)).not.toContain('EVENT_TYPE_WORKFLOW_TASK_FAILED');
    // A kill Signal with a reason is applied whatever else it carries.
    await handle.signal(controlSignals.kill, { reason: 'cleanup', force: true } as never);
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: expect.stringContaining('cleanup') });
  });
});

describe('sub-agents', () => {
  it('returns emergency_stop to the parent at once when the child trips, leaving the child stopped', async () => {
    const runId = await h.start({ ...base, goal: 'delegate', model: 'scripted:delegator', tools: ['shell', 'delegate'] });
    const result = await h.result(runId);
    expect(result).toMatchObject({ status: 'completed', summary: 'parent done' });
    const second = h.scripted.requestsFor(runId).find((r) => r.step === 1)!;
    expect(JSON.stringify(second.body.messages)).toContain('emergency_stop');
  });

  it("stops the child it waits on when the parent is stopped, and lets it go on when the parent's stop is cleared", async () => {
    const runId = await h.start({ ...base, goal: 'delegate', model: 'scripted:delegate-hangs-twice', tools: ['shell', 'delegate'] });
    const childId = (await h.until(runId, (s) => (s.children?.length ?? 0) > 0)).children![0];
    await waitForProcesses(CHILD_HANGING);
    await controlRun(h.tc, runId, 'emergencyStop', { reason: 'operator looks at the parent' });
    const stopped = await h.until(childId, (s) => s.state === 'emergency_stopped');
    expect(stopped.emergencyStop).toMatchObject({ active: true, reason: 'parent emergency-stopped: operator looks at the parent' });
    // Nothing executes under a stopped parent: the child's command is gone too.
    await eventually(
      "the child's command to die",
      () => processesWith(CHILD_HANGING),
      (pids) => pids.length === 0,
    );
    await controlRun(h.tc, runId, 'clearEmergency', {});
    // The child goes on to its next step, and the parent still waits on it: the stop was the parent's, not the child's own to report.
    await waitForProcesses(CHILD_HANGING);
    expect((await h.status(childId)).state).toBe('running');
    expect((await h.status(runId)).state).toBe('running');
    expect((await getTranscript(h.tc, runId)).filter((m) => m.role === 'tool')).toEqual([]);
    await controlRun(h.tc, runId, 'kill', { reason: 'cleanup' });
    expect(['killed', 'cancelled']).toContain((await h.result(childId)).status);
  });

  it('gives the model a failed call, and goes on, when its sub-agent ends with no result of its own (terminated by hand)', async () => {
    const runId = await h.start({ ...base, goal: 'delegate', model: 'scripted:delegates-to-doomed', tools: ['shell', 'delegate'] });
    const childId = (await h.until(runId, (s) => (s.children?.length ?? 0) > 0)).children![0];
    await waitForProcesses(CHILD_HANGING);
    await h.tc.client.workflow.getHandle(childId).terminate('an operator gave up on it');
    // Its command dies with it, not when the worker's wait for a retry that never comes runs out (30 s).
    await eventually(
      "the terminated sub-agent's command to die",
      () => processesWith(CHILD_HANGING),
      (found) => found.length === 0,
      { timeoutMs: 10_000 },
    );
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'went on without the child' });
    const result = (await getTranscript(h.tc, runId)).find((m) => m.role === 'tool' && m.toolName === 'delegate');
    expect(result).toMatchObject({ success: false, content: expect.stringContaining(`sub-agent ${childId} ended without a result`) });
  });

  it('a parent cancelled through Temporal takes its child along: the child reads killed everywhere, with the work it did', async () => {
    const runId = await h.start({ ...base, goal: 'delegate', model: 'scripted:delegate-hang', tools: ['shell', 'delegate'] });
    const status = await h.until(runId, (s) => (s.children?.length ?? 0) > 0);
    const childId = status.children![0]!;
    await h.until(childId, (s) => s.lastTool === 'shell');
    await h.tc.client.workflow.getHandle(runId).cancel();
    expect((await h.result(runId)).status).toBe('cancelled');
    // The child, told to cancel, was still killing its tool when its parent's close ended it.
    const child = await h.result(childId);
    expect((await h.tc.client.workflow.getHandle(childId).describe()).status.name).toBe('TERMINATED');
    expect(child).toMatchObject({ status: 'killed', steps: 1, cause: 'terminated: by parent close policy' });
    expect(child.costUsd).toBeGreaterThan(0);
    expect(child.usage.totalTokens).toBeGreaterThan(0);
    expect((await readRunStatus(h.tc, childId)).status).toMatchObject({ state: 'killed', step: 1, costUsd: child.costUsd });
  });

  it('kills the child when the parent is killed', async () => {
    const runId = await h.start({ ...base, goal: 'delegate', model: 'scripted:delegate-hang', tools: ['shell', 'delegate'] });
    const status = await h.until(runId, (s) => (s.children?.length ?? 0) > 0);
    const childId = status.children![0];
    await h.until(childId, (s) => s.lastTool === 'shell');
    await waitForProcesses(HANGING);
    await controlRun(h.tc, runId, 'kill', { reason: 'abort everything' });
    const parent = await h.result(runId);
    expect(parent.status).toBe('killed');
    const child = await h.result(childId);
    expect(child.status).toBe('killed');
    // The parent waited for the child to end as killed: its search attributes are final, and what it spent is the parent's too.
    const described = await h.tc.client.workflow.getHandle(childId).describe();
    expect(described.status.name).toBe('FAILED');
    expect(described.typedSearchAttributes.get(TetherStateKey)).toBe('killed');
    expect(child.costUsd).toBeGreaterThan(0);
    expect(parent.costUsd).toBeCloseTo(status.costUsd + child.costUsd, 6);
    // The child's tool dies with the parent, though the parent's close may end the child before the child cancels it.
    await eventually(
      "the child's command to die",
      () => processesWith(HANGING),
      (found) => found.length === 0,
      { timeoutMs: 10_000 },
    );
  });
});
