import { describe, expect, it } from 'vitest';
import { parseRunSpec } from '../../src/api/spec.js';
import { deadlineCause, initialRuntimeMs, Limits } from '../../src/run/limits.js';

const T0 = 1_000_000;
const fresh = () => new Limits({ deadlineMs: T0 + 60_000, maxSteps: 10, pausedAtMs: null });

describe('the run limits', () => {
  it('count the time left to the deadline', () => {
    const limits = fresh();
    expect(limits.remainingMs(T0)).toBe(60_000);
    expect(limits.remainingMs(T0 + 70_000)).toBe(-10_000);
  });

  it('suspend the deadline while paused and push it out by the pause on resume', () => {
    const limits = fresh();
    limits.pause(T0 + 10_000);
    expect(limits.remainingMs(T0 + 500_000)).toBe(50_000);
    expect(limits.deadline(T0 + 40_000)).toBe(T0 + 90_000);
    limits.resume(T0 + 40_000);
    expect(limits.deadline(T0 + 40_000)).toBe(T0 + 90_000);
    expect(limits.remainingMs(T0 + 40_000)).toBe(50_000);
  });

  it('take a second pause or resume as no change', () => {
    const limits = fresh();
    limits.pause(T0);
    const version = limits.version;
    limits.pause(T0 + 5_000);
    expect(limits.version).toBe(version);
    limits.resume(T0 + 10_000);
    limits.resume(T0 + 20_000);
    expect(limits.deadline(T0 + 20_000)).toBe(T0 + 70_000);
  });

  it('extend the deadline and the step ceiling, ignoring negative amounts and never wrapping', () => {
    const limits = fresh();
    limits.extend(30_000, 5);
    expect(limits.deadline(T0)).toBe(T0 + 90_000);
    expect(limits.steps).toBe(15);
    limits.extend(-1_000_000, -100);
    expect(limits.steps).toBe(15);
    limits.extend(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    expect(limits.steps).toBe(Number.MAX_SAFE_INTEGER);
    expect(limits.deadline(T0)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('bump their version on every change, so a timer on the old deadline re-arms', () => {
    const limits = fresh();
    const versions = [limits.version];
    limits.extend(1_000);
    versions.push(limits.version);
    limits.pause(T0);
    versions.push(limits.version);
    limits.resume(T0 + 1);
    versions.push(limits.version);
    expect(new Set(versions).size).toBe(4);
  });

  it('survive a snapshot, paused or not', () => {
    const limits = fresh();
    limits.pause(T0 + 1_000);
    const restored = new Limits(JSON.parse(JSON.stringify(limits.snapshot())));
    expect(restored.paused).toBe(true);
    expect(restored.remainingMs(T0 + 999_999)).toBe(59_000);
  });
});

describe("a run's first deadline", () => {
  const spec = (over: Record<string, unknown>) => parseRunSpec({ goal: 'g', model: 'scripted:x', ...over });

  it('is maxRuntime when given, else the critic backstop, else the default 30 minutes; its cause names which', () => {
    const given = spec({ limits: { maxRuntime: '5m' } });
    expect(initialRuntimeMs(given)).toBe(300_000);
    expect(deadlineCause(given, 'D')).toBe('maxRuntime reached (deadline D)');
    const backstop = spec({ critic: { policy: 'extend-once', softTimeout: '2m', backstopMultiplier: 4 } });
    expect(initialRuntimeMs(backstop)).toBe(480_000);
    expect(deadlineCause(backstop, 'D')).toMatch(
      /^deadline reached \(D\): with no limits.maxRuntime, a run with a critic has softTimeout × backstopMultiplier \(120 s × 4\)/,
    );
    const bare = spec({ critic: { policy: 'off' } });
    expect(initialRuntimeMs(bare)).toBe(30 * 60_000);
    expect(deadlineCause(bare, 'D')).toBe('maxRuntime reached (deadline D)');
  });
});
