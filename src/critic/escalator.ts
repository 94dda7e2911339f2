import type { Decision, Progress } from '../run/critic-watch.js';

export interface CriticRunInfo {
  runId: string;
  goal: string;
}

/** The policy seam: what to do when a run crosses its soft timeout. Called at most once per idle period. */
export interface Escalator {
  onSoftTimeout(run: CriticRunInfo, progress: Progress): Promise<Decision> | Decision;
}

/**
 * The default policy: the first stall of a run extends its deadline by one
 * soft timeout (room for a slow but healthy run); later stalls do nothing, so
 * a truly hung run meets the hard backstop. Keyed per run: one escalator may
 * watch many runs, and a single flag would give only the first run to stall
 * its extension.
 */
export class ExtendOnce implements Escalator {
  private readonly fired: Set<string>;

  constructor(
    private readonly by: number,
    fired: string[] = [],
  ) {
    this.fired = new Set(fired);
  }

  onSoftTimeout(run: CriticRunInfo, progress: Progress): Decision {
    if (this.fired.has(run.runId)) return {};
    this.fired.add(run.runId);
    return { extendBy: this.by > 0 ? this.by : progress.idleMs };
  }

  snapshot(): string[] {
    return [...this.fired];
  }
}
