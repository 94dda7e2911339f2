import { type ForkOf, ForkRejected, type ForkSource, forkSpec, planFork } from '../api/fork.js';
import { forkSourceQuery } from '../api/messages.js';
import { TetherForkOfKey } from '../api/search-attributes.js';
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

/** What the run to fork says of itself; an unknown id is a `not_found` error. */
export async function forkSource(tc: TetherClient, runId: string): Promise<ForkSource> {
  try {
    return await tc.client.workflow.getHandle(runId).query(forkSourceQuery);
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
