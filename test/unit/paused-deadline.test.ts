import { describe, expect, it } from 'vitest';
import type { RunStatus } from '../../src/api/types.js';
import { withCurrentDeadline } from '../../src/client/paused-deadline.js';

const at = (iso: string) => Date.parse(iso);
const status = (state: RunStatus['state']) => ({ state, deadline: '2026-01-01T10:30:00.000Z', asOf: '2026-01-01T10:00:00.000Z' }) as RunStatus;

describe("a status's deadline as of now", () => {
  it('moves on by the time a paused run has waited since it answered', () => {
    expect(withCurrentDeadline(status('emergency_stopped'), at('2026-01-01T10:05:00Z')).deadline).toBe('2026-01-01T10:35:00.000Z');
    expect(withCurrentDeadline(status('blocked'), at('2026-01-01T10:00:10Z')).deadline).toBe('2026-01-01T10:30:10.000Z');
  });

  it('stands for a running or ended run, and for a status that does not say when it was taken', () => {
    expect(withCurrentDeadline(status('running'), at('2026-01-01T10:05:00Z')).deadline).toBe('2026-01-01T10:30:00.000Z');
    expect(withCurrentDeadline(status('killed'), at('2026-01-01T10:05:00Z')).deadline).toBe('2026-01-01T10:30:00.000Z');
    const old = { state: 'blocked', deadline: '2026-01-01T10:30:00.000Z' } as RunStatus;
    expect(withCurrentDeadline(old, at('2026-01-01T10:05:00Z'))).toBe(old);
  });
});
