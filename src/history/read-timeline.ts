import type { Client } from '@temporalio/client';
import { readChain } from './fetch.js';
import { type RunHistory, readRunHistory } from './run-history.js';
import { type Timeline, timelineOf } from './timeline.js';

/**
 * Reads what a timeline is drawn from: the run's history (every execution)
 * and its critic children's, whose decisions are model calls of their own.
 * A critic whose history cannot be read (retention) is left out rather than
 * failing the run's timeline.
 */
export async function readRunAndCritics(client: Client, runId: string): Promise<{ history: RunHistory; critics: RunHistory[] }> {
  const history = readRunHistory(runId, await readChain(client, runId));
  const criticIds = [...new Set(history.children.filter((c) => c.workflowType === 'critic').map((c) => c.workflowId))];
  const critics = await Promise.all(criticIds.map(async (id) => readRunHistory(id, await readChain(client, id).catch(() => []))));
  return { history, critics };
}

/** The run's timeline, read from Temporal. */
export async function readTimeline(client: Client, runId: string): Promise<Timeline> {
  const { history, critics } = await readRunAndCritics(client, runId);
  return timelineOf(history, critics);
}
