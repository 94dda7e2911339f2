import type { ForkStart } from '../api/fork.js';
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
  };
}
