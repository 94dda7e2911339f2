import { type ForkOf, ForkRejected, type ForkSource, forkSpec, planFork } from '../api/fork.js';
import { forkSourceQuery } from '../api/messages.js';
import { TetherForkOfKey } from '../api/search-attributes.js';
import { hasLiveWorker } from './worker-presence.js';
import { TetherError } from './errors.js';
import { startRun, type TetherClient, toTetherError } from './runs.js';

/** What `tether fork` and the panel ask for. */
export interface ForkRequest {
  step: number;
  steer?: string;
  model?: string;
  id?: string;
  taskQueue?: string;
}

/**
 * What the run to fork says of itself; an unknown id is a `not_found` error.
 * Only a worker can answer, by replaying the run: for an ended run with no
 * worker on its queue, the query would wait half a minute and fail with no
 * reason given, so that is said at once.
 */
export async function forkSource(tc: TetherClient, runId: string): Promise<ForkSource> {
  const handle = tc.client.workflow.getHandle(runId);
  const description = await handle.describe().catch((err: unknown) => {
    throw toTetherError(err, runId);
  });
  if (description.status.name !== 'RUNNING' && !(await hasLiveWorker(tc, description.taskQueue))) {
    throw new TetherError(
      `run ${runId} has ended, and no worker polls its task queue "${description.taskQueue}" to replay it for the fork: start one (\`tether worker\`), then fork again`,
      'unreachable',
    );
  }
  try {
    return await handle.query(forkSourceQuery);
  } catch (err) {
    const error = toTetherError(err, runId);
    if (error instanceof TetherError) throw error;
    throw new TetherError(`cannot read run ${runId} to fork it: ${(err as Error).message}`, 'rejected');
  }
}

/**
 * Starts a fork of `runId` at `request.step`: the original's transcript up to
 * that step, its files as they were after it (restored on the worker that
 * holds the checkpoint), then the steer and the model given. Bad input is a
 * TetherError that says what would work.
 */
export async function forkRun(tc: TetherClient, runId: string, request: ForkRequest): Promise<{ runId: string; forkOf: ForkOf }> {
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
    carry: { fork: start, workspaceQueue: start.restore.queue },
    searchAttributes: [{ key: TetherForkOfKey, value: source.runId }],
  });
  return { runId: fork.runId, forkOf: start.of };
}
