import { describe, expect, it } from 'vitest';
import { ExtendOnce } from '../../src/critic/escalator.js';
import { parseCriticAnswer } from '../../src/critic/llm-decision.js';
import { type LlmAdvice, LlmEscalator } from '../../src/critic/llm-escalator.js';
import { CriticWatch, type Progress } from '../../src/run/critic-watch.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe('the critic watch (injected clock)', () => {
  it('escalates once per idle period and re-arms on fresh activity', () => {
    const watch = new CriticWatch(60_000, T0);
    expect(watch.nextEscalationAt()).toBe(T0 + 60_000);
    expect(watch.apply({ extendBy: 60_000 }, T0 + 60_000)).toEqual([{ name: 'extend', payload: { by: 60_000 } }]);
    expect(watch.nextEscalationAt()).toBeNull();
    watch.recordActivity({ step: 3, lastActivityAt: at(90_000), lastTool: 'shell' });
    expect(watch.nextEscalationAt()).toBe(T0 + 150_000);
    expect(watch.progress(T0 + 150_000)).toMatchObject({ step: 3, idleMs: 60_000, lastTool: 'shell' });
  });

  it('never escalates while the run is paused, and counts idle time again from when it went on', () => {
    const watch = new CriticWatch(60_000, T0);
    watch.recordActivity({ step: 2, lastActivityAt: at(10_000), lastTool: 'shell', paused: true });
    expect(watch.nextEscalationAt()).toBeNull();
    // A report without the flag (a tool that ended as the stop cut it) leaves the run paused.
    watch.recordActivity({ step: 2, lastActivityAt: at(20_000), lastTool: 'shell' });
    expect(watch.nextEscalationAt()).toBeNull();
    watch.recordActivity({ step: 2, lastActivityAt: at(3_600_000), lastTool: 'shell', paused: false });
    expect(watch.nextEscalationAt()).toBe(T0 + 3_660_000);
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

describe('the llm escalator', () => {
  const run = { runId: 'r1', goal: 'g' };
  const progress: Progress = { step: 2, lastActivityAt: at(0), idleMs: 5_000, lastTool: 'shell' };
  const escalator = (ask: () => Promise<LlmAdvice>) => {
    const seen = { costs: [] as number[], fallbacks: [] as string[] };
    const policy = new LlmEscalator(ask, new ExtendOnce(2_000), { onCost: (c) => seen.costs.push(c), onFallback: (w) => seen.fallbacks.push(w) });
    return { policy, seen };
  };

  it("follows the model's decision and counts what asking cost", async () => {
    const { policy, seen } = escalator(async () => ({ decision: { nudge: 'try smaller steps' }, costUsd: 0.002 }));
    expect(await policy.onSoftTimeout(run, progress)).toEqual({ nudge: 'try smaller steps' });
    expect(seen).toEqual({ costs: [0.002], fallbacks: [] });
  });

  it('falls back to extend-once when the answer is unusable, still counting its cost', async () => {
    const { policy, seen } = escalator(async () => ({ decision: null, costUsd: 0.001, error: 'unusable answer: hmm' }));
    expect(await policy.onSoftTimeout(run, progress)).toEqual({ extendBy: 2_000 });
    expect(seen.costs).toEqual([0.001]);
    expect(seen.fallbacks).toEqual(['llm critic gave no usable decision (unusable answer: hmm)']);
  });

  it('falls back to extend-once when the model cannot be asked, and extends each run only once', async () => {
    const { policy, seen } = escalator(async () => {
      throw new Error('activity timed out');
    });
    expect(await policy.onSoftTimeout(run, progress)).toEqual({ extendBy: 2_000 });
    expect(await policy.onSoftTimeout(run, progress)).toEqual({});
    expect(seen.fallbacks).toEqual(['llm critic failed (activity timed out)', 'llm critic failed (activity timed out)']);
    expect(seen.costs).toEqual([]);
  });
});
