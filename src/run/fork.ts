import type { ForkStart } from '../api/fork.js';
import type { AuditEntry } from '../api/types.js';
import type { RunSnapshot } from './run-types.js';

/**
 * The state a fork starts in: a fresh run's `base` state at the source's step,
 * with its transcript, its checkpoints and a full step budget of its own on
 * top of the steps it inherits; the steer waits for the first model call.
 */
export function forkSnapshot(base: RunSnapshot, start: ForkStart): RunSnapshot {
  return {
    ...base,
    step: start.of.step,
    transcript: start.transcript.map((m) => ({ ...m })),
    pendingSteers: start.steer ? [start.steer] : [],
    limits: { ...base.limits, maxSteps: base.limits.maxSteps + start.of.step },
    forkOf: start.of,
    checkpoints: start.checkpoints,
    ...(start.audit ? { audit: [forkAuditEntry(start, base.startedAtMs)] } : {}),
  };
}

/** Who forked the run, first in the fork's audit trail: from where, and the steer it started with. */
function forkAuditEntry(start: ForkStart, atMs: number): AuditEntry {
  const steer = start.steer?.trim().replace(/\s+/g, ' ');
  const detail = `from ${start.of.runId} at step ${start.of.step}${steer ? `, steer: ${steer}` : ''}`;
  return {
    action: 'fork',
    by: start.audit?.by ?? 'unknown',
    ...(start.audit?.via ? { via: start.audit.via } : {}),
    at: new Date(atMs).toISOString(),
    detail: detail.length > 200 ? `${detail.slice(0, 199)}…` : detail,
  };
}
