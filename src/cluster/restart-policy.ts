/**
 * When a part of the local cluster that stopped is started again: the rhythm
 * of Docker's `restart: unless-stopped`, which docker-compose.yml gives every
 * long-running service. Pure, so it is unit-tested without a process.
 */

/** `unless-stopped`: every part that stops is started again until `down`; `no`: nothing is. */
export const RESTART_POLICIES = ['unless-stopped', 'no'] as const;
export type RestartPolicy = (typeof RESTART_POLICIES)[number];

/** The first delay; each quick failure doubles it, up to the cap (Docker's 100 ms and one minute). */
export const FIRST_DELAY_MS = 100;
export const MAX_DELAY_MS = 60_000;
/** A part that ran this long before it stopped was healthy: its next restart is quick again (Docker's 10 s). */
export const HEALTHY_AFTER_MS = 10_000;

/** What the supervisor remembers of one part's restarts. */
export interface RestartHistory {
  /** The delay before the last restart. */
  lastDelayMs: number;
  /** When the part was last started (ms since the epoch). */
  startedAt: number;
}

/**
 * How long to wait before starting again a part found stopped at `now`:
 * the first delay for a part never restarted or one that ran long enough to
 * count as healthy, else twice the last delay, capped.
 */
export function restartDelay(history: RestartHistory | undefined, now: number): number {
  if (!history || now - history.startedAt >= HEALTHY_AFTER_MS) return FIRST_DELAY_MS;
  return Math.min(history.lastDelayMs * 2, MAX_DELAY_MS);
}
