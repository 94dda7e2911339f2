import { type ForkOf, ForkRejected, type ForkSource, forkSpec, planFork } from '../api/fork.js';
import type { Audit } from '../api/control.js';
import { forkSourceQuery } from '../api/messages.js';
import { TetherForkOfKey } from '../api/search-attributes.js';
import { noWorkerFor, noWorkerToReplay, runWorkerPresence } from './worker-presence.js';
import { TetherError } from './errors.js';
import { checkControlSecrets } from './run-start-check.js';
import { answeredQuery, startRun, type TetherClient, toTetherError } from './runs.js';

/** What `tether fork` and the panel ask for. */
export interface ForkRequest {
  step: number;
  steer?: string;
  model?: string;
  id?: string;
  taskQueue?: string;
}

/** How long the run to fork may take to answer: an ended one is replayed whole by a worker first. */
const FORK_SOURCE_MS = 30_000;

/**
 * What the run to fork says of itself; an unknown id is a `not_found` error.
 * Only a worker can answer, by replaying the run: with no worker on its
 * queue, the query would wait half a minute and fail with no reason given,
 * so that is said at once.
 */
export async function forkSource(tc: TetherClient, runId: string): Promise<ForkSource> {
  const handle = tc.client.workflow.getHandle(runId);
  const description = await handle.describe().catch((err: unknown) => {
    throw toTetherError(err, runId);
  });
  const presence = await runWorkerPresence(tc, description);
  if (!presence.live && description.status.name === 'RUNNING') throw noWorkerFor(runId, 'fork', presence, 'answer');
  if (!presence.live) throw noWorkerToReplay(runId, 'fork', presence);
  try {
    return await answeredQuery(tc, runId, 'fork', FORK_SOURCE_MS, () => handle.query(forkSourceQuery));
  } catch (err) {
    if (err instanceof TetherError) throw err;
    throw new TetherError(`cannot read run ${runId} to fork it: ${(err as Error).message}`, 'rejected');
  }
}

/**
 * Starts a fork of `runId` at `request.step`: the original's transcript up to
 * that step, its files as they were after it (restored on the worker that
 * holds the checkpoint), then the steer and the model given; `audit` says who
 * asked, first in the fork's audit trail. Bad input is a
 * TetherError that says what would work.
 */
export async function forkRun(tc: TetherClient, runId: string, request: ForkRequest, audit?: Audit): Promise<{ runId: string; forkOf: ForkOf }> {
  checkControlSecrets('fork', { steer: request.steer, audit });
  const source = await forkSource(tc, runId);
  let start: ReturnType<typeof planFork>;
  try {
    start = planFork(source, request.step, request.steer);
  } catch (err) {
    if (err instanceof ForkRejected) throw new TetherError(err.message, 'invalid');
    throw err;
  }
  const fork = await startRun(tc, forkSpec(source.spec, request.model), {
    ...(request.id ? { id: request.id } : {}),
    ...(request.taskQueue ? { taskQueue: request.taskQueue } : {}),
    // Bound to the worker that holds the checkpoint: the fork's files are restored there, and its tools run there.
    carry: { fork: audit ? { ...start, audit } : start, ...(start.restore ? { workspaceQueue: start.restore.queue } : {}) },
    searchAttributes: [{ key: TetherForkOfKey, value: source.runId }],
  });
  return { runId: fork.runId, forkOf: start.of };
}
