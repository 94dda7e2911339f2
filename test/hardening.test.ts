import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_WORKFLOW_ID } from '../src/api/fleet.js';
import type { RunStatus } from '../src/api/types.js';
import { startRun, TetherError } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { eventually } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { eventTypes } from './helpers/history.js';

const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
const finish = (summary: string) => call('finish', { summary });

const scripts: Record<string, Script> = {
  asks: { steps: [call('ask_user', { question: 'go on?' }), finish('answered')] } as Script,
  'busy-with-critic': { steps: [{ ...call('shell', { command: 'echo {{step}}' }), repeat: 120 }, finish('busy run done')] } as Script,
  'shares-workspace': {
    steps: [
      call('write_file', { path: 'shared.txt', content: 'from the parent' }),
      call('delegate', { goal: 'copy it', model: 'scripted:copies' }),
      finish('parent done'),
    ],
  } as Script,
  copies: { steps: [call('shell', { command: 'cp shared.txt copied.txt' }), finish('copied')] } as Script,
  quick: { steps: [finish('quick')] } as Script,
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ scripts });
});
afterAll(async () => h?.stop());

const noCritic = { critic: { policy: 'off' as const } };
const handle = (id: string) => h.tc.client.workflow.getHandle(id);

/**
 * Why the workflow's tasks failed; a workflow that handles every input well has
 * none. "UnhandledCommand" is Temporal's own retry when a signal lands as the
 * workflow completes or continues as new, not a failure of the code.
 */
async function taskFailures(workflowId: string, runId?: string): Promise<string[]> {
  const events = (await h.tc.client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
  return events.flatMap((e) => {
    const failed = e.workflowTaskFailedEventAttributes;
    if (!failed || failed.failure?.message === 'UnhandledCommand') return [];
    return [failed.failure?.message ?? '?'];
  });
}

/** Every execution of a workflow id, oldest first, with its status and event types. */
async function executions(workflowId: string): Promise<Array<{ status: string; events: string[]; taskFailures: string[] }>> {
  const out: Array<{ status: string; events: string[]; taskFailures: string[]; start: number }> = [];
  for await (const info of h.tc.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const events = await eventTypes(h.tc.client.workflow.getHandle(workflowId, info.runId));
    out.push({ status: info.status.name, events, taskFailures: await taskFailures(workflowId, info.runId), start: info.startTime.getTime() });
  }
  return out.sort((a, b) => a.start - b.start);
}

describe('malformed messages never fail a workflow task', () => {
  it('ignores bad signals, rejects bad updates, and the run still completes', async () => {
    const runId = await h.start({ goal: 'ask', model: 'scripted:asks', tools: ['shell', 'ask_user'], critic: { policy: 'extend-once', softTimeout: '10m' } });
    await h.until(runId, (s) => s.state === 'blocked');
    const run = handle(runId);
    for (const [name, payload] of [
      ['steer', 42],
      ['kill', {}],
      ['extend', { by: 'forever' }],
      ['approve', 'x'],
      ['answer', { text: '' }],
      ['criticReport', { policy: 5 }],
      ['criticReport', null],
      ['childEmergency', null],
      ['childEmergency', { childId: 7 }],
    ] as const) {
      await run.signal(name, payload);
    }
    await expect(run.executeUpdate('kill', { args: [{}] })).rejects.toThrow(WorkflowUpdateFailedError);
    await expect(run.executeUpdate('steer', { args: ['not an object'] })).rejects.toThrow(WorkflowUpdateFailedError);
    // A refusal says why, and that sending the same message again is no use.
    await expect(run.executeUpdate('extend', { args: [{ by: 'forever' }] })).rejects.toMatchObject({
      cause: { type: 'ControlRejected', nonRetryable: true, message: expect.stringMatching(/^extend: by: /) },
    });
    // The critic takes progress from the run; a bad one is ignored and it keeps watching.
    await handle(`${runId}.critic`).signal('progress', { step: 'many', lastActivityAt: 'never' });
    await handle(`${runId}.critic`).signal('progress', null);
    expect((await h.status(runId)).state).toBe('blocked');
    // A Signal cannot answer its sender: the run's warnings say what it ignored and why, the latest five.
    const ignoredSignals = (s: RunStatus) => s.warnings.filter((w) => /^ignored \w+ signal at /.test(w));
    const ignored = ignoredSignals(await h.until(runId, (s) => ignoredSignals(s).length === 5));
    expect(ignored.map((w) => w.split(' ')[1])).toEqual(['steer', 'kill', 'extend', 'approve', 'answer']);
    expect(ignored[2]).toMatch(/^ignored extend signal at \S+Z: extend: by: /);
    // A message with no payload at all never meets the encryption codec: it must not clear a stop.
    await run.executeUpdate('emergencyStop', { args: [{ reason: 'hold' }] });
    await run.signal('clearEmergency');
    await expect(run.executeUpdate('clearEmergency', { args: [] })).rejects.toThrow(WorkflowUpdateFailedError);
    expect((await h.status(runId)).emergencyStop.active).toBe(true);
    await run.executeUpdate('clearEmergency', { args: [{}] });
    await run.signal('answer', { text: 'yes' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'answered' });
    expect(await taskFailures(runId)).toEqual([]);
    const critic = await eventually(
      'the critic to end with the run',
      () => executions(`${runId}.critic`),
      (runs) => runs.at(-1)?.status === 'COMPLETED',
    );
    for (const c of critic) expect(c.taskFailures).toEqual([]);
  });

  it('fails a run, a critic or a fleet holder started with a malformed input, rather than its workflow task', async () => {
    const stamp = Date.now();
    const starts = [
      {
        type: 'agentRun',
        id: `bad-carry-${stamp}`,
        args: [
          { ...noCritic, goal: 'g', model: 'scripted:quick' },
          { snapshot: 'garbage', criticStarted: 'yes' },
        ],
        error: /invalid run carry/,
      },
      {
        type: 'agentRun',
        id: `bad-snapshot-${stamp}`,
        args: [{ ...noCritic, goal: 'g', model: 'scripted:quick' }, { snapshot: { limits: 5 } }],
        error: /invalid run carry: snapshot\.limits/,
      },
      { type: 'critic', id: `bad-critic-${stamp}`, args: [{ runId: 7, policy: 'nope' }], error: /invalid critic input/ },
      {
        type: 'critic',
        id: `bad-critic-state-${stamp}`,
        args: [{ runId: 'r', goal: 'g', model: 'scripted:x', policy: 'extend-once', softTimeoutMs: 1000, state: { watch: 1 } }],
        error: /invalid critic state/,
      },
      { type: 'fleetControl', id: `bad-fleet-${stamp}`, args: [{ active: 'very' }], error: /invalid fleet state/ },
    ];
    for (const start of starts) {
      const started = await h.tc.client.workflow.start(start.type, { taskQueue: h.taskQueue, workflowId: start.id, args: start.args });
      const failed = await started.result().catch((err: unknown) => err);
      expect(failed, start.id).toBeInstanceOf(WorkflowFailedError);
      expect((failed as WorkflowFailedError).cause?.message, start.id).toMatch(start.error);
      expect(await taskFailures(start.id), start.id).toEqual([]);
    }
  });

  it('rejects a malformed setFleetStop update on a private fleet holder (never the shared one)', async () => {
    const id = `private-fleet-${Date.now()}`;
    expect(id).not.toBe(FLEET_WORKFLOW_ID);
    const fleet = await h.tc.client.workflow.start('fleetControl', { taskQueue: h.taskQueue, workflowId: id, args: [] });
    try {
      await expect(fleet.executeUpdate('setFleetStop', { args: [{ active: 'maybe' }] })).rejects.toThrow(WorkflowUpdateFailedError);
      await expect(fleet.executeUpdate('setFleetStop', { args: [null] })).rejects.toThrow(WorkflowUpdateFailedError);
      expect(await fleet.query('fleetState')).toEqual({ active: false, reason: null, since: null });
      expect(await taskFailures(id)).toEqual([]);
    } finally {
      await fleet.terminate('test done');
    }
  });
});

describe("the critic's history stays bounded", () => {
  it('continues the critic as new on a busy run, and it keeps watching to the end', async () => {
    const runId = await h.start({
      goal: 'be busy',
      model: 'scripted:busy-with-critic',
      limits: { maxSteps: 200, maxHistoryEvents: 200, maxRuntime: '10m' },
      critic: { policy: 'extend-once', softTimeout: '3s' },
    });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'busy run done' });
    const critic = await eventually(
      'the critic to end with the run',
      () => executions(`${runId}.critic`),
      (runs) => runs.at(-1)?.status === 'COMPLETED',
    );
    expect(critic.length).toBeGreaterThan(1);
    expect(critic.slice(0, -1).every((c) => c.status === 'CONTINUED_AS_NEW')).toBe(true);
    for (const c of critic) {
      expect(c.taskFailures).toEqual([]);
      // Bounded: the check runs on every report, so an execution ends a few events past the limit.
      expect(c.events.length).toBeLessThan(260);
    }
    // The last execution still heard from the run: the run's final report ended it.
    expect(critic.at(-1)!.events.filter((e) => e === 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED').length).toBeGreaterThan(0);
  }, 180_000);
});

describe('delegated sub-agents', () => {
  it("work in the parent's workspace, as the delegate tool says", async () => {
    const runId = await h.start({ ...noCritic, goal: 'share', model: 'scripted:shares-workspace', tools: ['shell', 'write_file', 'delegate'] });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'parent done' });
    expect(await readFile(path.join(h.workspaceRoot, runId, 'copied.txt'), 'utf8')).toBe('from the parent');
  });
});

describe('a RunSpec holding a secret', () => {
  it('is refused before it reaches Temporal, naming the field and the variable but not the value', async () => {
    const key = 'sk-test-0123456789abcdefXYZ';
    const env = { ...process.env, OPENAI_API_KEY: key };
    const id = `secret-${Date.now()}`;
    const refused = await startRun(
      h.tc,
      { ...noCritic, goal: 'g', model: 'scripted:quick', system: `the key is ${key}` },
      { id, taskQueue: h.taskQueue, env },
    ).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(TetherError);
    expect((refused as TetherError).message).toMatch(/^invalid RunSpec: system contains the value of the secret OPENAI_API_KEY/);
    expect((refused as TetherError).message).not.toContain(key);
    await expect(handle(id).describe()).rejects.toThrow(/not found/i);
  });
});
