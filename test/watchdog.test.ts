import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlRun } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { openTimersAtRest, scheduledActivities, signalsReceived } from './helpers/history.js';

const EventType = proto.temporal.api.enums.v1.EventType;
const hang = { reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 300' } }] } };
const scripts: Record<string, Script> = {
  'hangs-quietly': { steps: [hang] } as Script,
  'sleeps-then-finishes': {
    steps: [
      { reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 3' } }] } },
      { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } },
    ],
  } as Script,
  'waits-for-an-operator': {
    steps: [
      hang,
      // Busy after the stop, well short of the soft timeout: its resumption is activity, not a stall to escalate.
      { reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 2' } }] } },
      { reply: { toolCalls: [{ name: 'finish', args: { summary: 'went on after the stop' } }] } },
    ],
  } as Script,
  'critic-kills': { steps: [], after: { text: '{"action": "kill", "reason": "no progress for too long"}' } } as Script,
  'critic-nudges': { steps: [], after: { text: '```json\n{"action": "nudge", "message": "NUDGE: try a smaller step"}\n```' } } as Script,
  'critic-babbles': { steps: [], after: { text: 'hmm, hard to say' } } as Script,
  loops: { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'echo trying the same thing' } }] } } as Script,
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ scripts });
});
afterAll(async () => h?.stop());

describe('stuck-loop detection on a real server', () => {
  it('steers a looping model once with the pattern, then ends the run stuck', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:loops', critic: { policy: 'off' } });
    const result = await h.result(runId);
    expect(result.status).toBe('stuck');
    expect(result.pattern).toMatch(/shell .*echo trying the same thing.*repeated 4 times/);
    expect(result.steps).toBe(8);
    const steered = h.scripted.requestsFor(runId).filter((r) => JSON.stringify(r.body.messages).includes('You appear to be stuck in a loop'));
    expect(steered.length).toBeGreaterThan(0);
  });
});

describe('the critic on a real server', () => {
  it('extends a stalled run once, then lets the backstop end it timeout', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-quietly', critic: { policy: 'extend-once', softTimeout: '1s', backstopMultiplier: 3 } });
    const result = await h.result(runId);
    expect(result.status).toBe('timeout');
    expect(await signalsReceived(h.tc.client.workflow.getHandle(runId))).toEqual(expect.arrayContaining(['extend']));
    const status = await h.status(runId);
    expect(status.critic?.decisions.map((d) => d.decision)).toEqual(['extend']);
  });

  it('applies an llm kill decision with the critic reason', async () => {
    const runId = await h.start({
      goal: 'x',
      model: 'scripted:hangs-quietly',
      limits: { maxRuntime: '1m' },
      critic: { policy: 'llm', softTimeout: '1s', model: 'scripted:critic-kills' },
    });
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: 'no progress for too long' });
    expect((await h.status(runId)).costUsd).toBeGreaterThan(0);
  });

  it('delivers an llm nudge to the model as a steer', async () => {
    const runId = await h.start({
      goal: 'x',
      model: 'scripted:sleeps-then-finishes',
      limits: { maxRuntime: '1m' },
      critic: { policy: 'llm', softTimeout: '1s', model: 'scripted:critic-nudges' },
    });
    expect((await h.result(runId)).status).toBe('completed');
    const second = h.scripted.requestsFor(runId).find((r) => r.step === 1)!;
    expect(JSON.stringify(second.body.messages)).toContain('NUDGE: try a smaller step');
  });

  it('closes a run only once its critic has ended: no closing turned back by the critic ending meanwhile', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:sleeps-then-finishes', limits: { maxRuntime: '1m' } });
    expect((await h.result(runId)).status).toBe('completed');
    const events = (await h.tc.client.workflow.getHandle(runId).fetchHistory()).events ?? [];
    const types = events.map((e) => EventType[e.eventType ?? 0]);
    // The critic's end is in the run's history, before the run's own: the run waited for it.
    expect(types.indexOf('EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED')).toBeGreaterThan(-1);
    expect(types.indexOf('EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED')).toBeLessThan(types.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED'));
    expect(types).not.toContain('EVENT_TYPE_WORKFLOW_TASK_FAILED');
    expect((await h.tc.client.workflow.getHandle(`${runId}.critic`).describe()).status.name).toBe('COMPLETED');
  });

  it('never escalates while the run is paused, nor when it goes on: an emergency-stopped run waits for a person, and is not stalled', async () => {
    const runId = await h.start({
      goal: 'x',
      model: 'scripted:waits-for-an-operator',
      limits: { maxRuntime: '1m' },
      // The 2 s command after the stop must stay well short of it on a loaded machine (3 s was not: the critic escalated once in CI).
      critic: { policy: 'llm', softTimeout: '8s', model: 'scripted:critic-kills' },
    });
    await h.until(runId, (s) => s.lastTool === 'shell');
    await controlRun(h.tc, runId, 'emergencyStop', { reason: 'an operator looks at it' });
    // The critic heard of the pause: it reports no escalation due.
    const stopped = await h.until(runId, (s) => s.state === 'emergency_stopped' && s.critic?.nextEscalationAt === null);
    expect(stopped.critic?.decisions).toEqual([]);
    // At rest with no timer, the critic cannot act until the run tells it more: one that counted the pause as idle
    // time would wait on its escalation timer, or would have asked its model already.
    const critic = h.tc.client.workflow.getHandle(`${runId}.critic`);
    expect(await openTimersAtRest(critic)).toEqual([]);
    expect(await scheduledActivities(critic)).toEqual([]);
    await controlRun(h.tc, runId, 'clearEmergency', {});
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'went on after the stop' });
    expect(h.scripted.requestsFor(runId).filter((r) => String(r.model).includes('critic-kills'))).toEqual([]);
  });

  it('falls back to extend-once when the llm answer is garbage', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-quietly', critic: { policy: 'llm', softTimeout: '1s', model: 'scripted:critic-babbles' } });
    await h.until(runId, (s) => (s.critic?.decisions.length ?? 0) > 0);
    expect((await h.status(runId)).critic?.decisions[0].decision).toBe('extend');
    await controlRun(h.tc, runId, 'kill', { reason: 'cleanup' });
  });

  it('leaves the run unaffected when its critic is terminated by hand', async () => {
    const runId = await h.start({
      goal: 'x',
      model: 'scripted:sleeps-then-finishes',
      limits: { maxRuntime: '1m' },
      critic: { policy: 'extend-once', softTimeout: '10s' },
    });
    await h.until(runId, (s) => s.critic !== undefined);
    await h.tc.client.workflow.getHandle(`${runId}.critic`).terminate('testing a dead critic');
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'done' });
  });
});
