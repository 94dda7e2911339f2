import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlRun } from '../src/client/runs.js';
import { ExtendOnce } from '../src/critic/escalator.js';
import { parseCriticAnswer } from '../src/critic/llm-decision.js';
import { CriticWatch } from '../src/run/critic-watch.js';
import type { Script } from '../src/scripted/script.js';
import { startHarness, type Harness } from './helpers/harness.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe('the critic mechanics (injected clock)', () => {
  it('escalates once per idle period and re-arms on fresh activity', () => {
    const watch = new CriticWatch(60_000, T0);
    expect(watch.nextEscalationAt()).toBe(T0 + 60_000);
    expect(watch.apply({ extendBy: 60_000 }, T0 + 60_000)).toEqual([{ name: 'extend', payload: { by: 60_000 } }]);
    expect(watch.nextEscalationAt()).toBeNull();
    watch.recordActivity({ step: 3, lastActivityAt: at(90_000), lastTool: 'shell' });
    expect(watch.nextEscalationAt()).toBe(T0 + 150_000);
    expect(watch.progress(T0 + 150_000)).toMatchObject({ step: 3, idleMs: 60_000, lastTool: 'shell' });
  });

  it('keeps a kill sticky and ignores what is paired with it', () => {
    const watch = new CriticWatch(1_000, T0);
    expect(watch.apply({ kill: true, killReason: 'hung', nudge: 'x', extendBy: 5_000 }, T0)).toEqual([{ name: 'kill', payload: { reason: 'hung' } }]);
    watch.recordActivity({ step: 1, lastActivityAt: at(5_000), lastTool: null });
    expect(watch.nextEscalationAt()).toBeNull();
    expect(watch.apply({ extendBy: 5_000 }, T0 + 10_000)).toEqual([]);
  });

  it('clamps huge raises instead of wrapping them', () => {
    const watch = new CriticWatch(1_000, T0);
    const [signal] = watch.apply({ raiseStepsBy: Number.MAX_SAFE_INTEGER * 4, extendBy: Number.MAX_VALUE }, T0);
    expect(signal).toEqual({ name: 'extend', payload: { by: 30 * 86_400_000, steps: 1_000_000 } });
  });

  it('extends each run once, keyed per run', () => {
    const policy = new ExtendOnce(2_000);
    const progress = { step: 0, lastActivityAt: at(0), idleMs: 2_000, lastTool: null };
    expect(policy.onSoftTimeout({ runId: 'a', goal: '' }, progress)).toEqual({ extendBy: 2_000 });
    expect(policy.onSoftTimeout({ runId: 'a', goal: '' }, progress)).toEqual({});
    expect(policy.onSoftTimeout({ runId: 'b', goal: '' }, progress)).toEqual({ extendBy: 2_000 });
  });

  it('reads llm answers, fenced or not, and refuses garbage', () => {
    expect(parseCriticAnswer('```json\n{"action":"kill","reason":"looping"}\n```')).toEqual({ kill: true, killReason: 'looping' });
    expect(parseCriticAnswer('Sure! {"action":"nudge","message":"run the tests"}')).toEqual({ nudge: 'run the tests' });
    expect(parseCriticAnswer('{"action":"extend","extendBySeconds":30}')).toMatchObject({ extendBy: 30_000 });
    expect(parseCriticAnswer('I think you should kill it')).toBeNull();
    expect(parseCriticAnswer('{"action":"explode"}')).toBeNull();
  });
});

const hang = { reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 300' } }] } };
const scripts: Record<string, Script> = {
  'hangs-quietly': { steps: [hang] } as Script,
  'sleeps-then-finishes': { steps: [{ reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 3' } }] } }, { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } }] } as Script,
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
    const started = Date.now();
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-quietly', critic: { policy: 'extend-once', softTimeout: '1s', backstopMultiplier: 3 } });
    const result = await h.result(runId);
    expect(result.status).toBe('timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_900);
    const status = await h.status(runId);
    expect(status.critic?.decisions.map((d) => d.decision)).toEqual(['extend']);
  });

  it('applies an llm kill decision with the critic reason', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-quietly', limits: { maxRuntime: '1m' }, critic: { policy: 'llm', softTimeout: '1s', model: 'scripted:critic-kills' } });
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: 'no progress for too long' });
    expect((await h.status(runId)).costUsd).toBeGreaterThan(0);
  });

  it('delivers an llm nudge to the model as a steer', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:sleeps-then-finishes', limits: { maxRuntime: '1m' }, critic: { policy: 'llm', softTimeout: '1s', model: 'scripted:critic-nudges' } });
    expect((await h.result(runId)).status).toBe('completed');
    const second = h.scripted.requestsFor(runId).find((r) => r.step === 1)!;
    expect(JSON.stringify(second.body.messages)).toContain('NUDGE: try a smaller step');
  });

  it('falls back to extend-once when the llm answer is garbage', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-quietly', critic: { policy: 'llm', softTimeout: '1s', model: 'scripted:critic-babbles' } });
    await h.until(runId, (s) => (s.critic?.decisions.length ?? 0) > 0);
    expect((await h.status(runId)).critic?.decisions[0].decision).toBe('extend');
    await controlRun(h.tc, runId, 'kill', { reason: 'cleanup' });
  });

  it('leaves the run unaffected when its critic is terminated by hand', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:sleeps-then-finishes', limits: { maxRuntime: '1m' }, critic: { policy: 'extend-once', softTimeout: '10s' } });
    await h.until(runId, (s) => s.critic !== undefined);
    await h.tc.client.workflow.getHandle(`${runId}.critic`).terminate('testing a dead critic');
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'done' });
  });
});
