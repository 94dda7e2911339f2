import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { ensureWorkspace } from '../tools/workspace.js';
import type { ActivityDeps } from './deps.js';

/** The run's workspace: the one its spec names, else a directory of its own under the worker's root. */
export async function workspaceFor(deps: ActivityDeps, runId: string, workspace: string | undefined): Promise<string> {
  const dir = workspace ?? path.join(deps.workspaceRoot, runId.replace(/[^A-Za-z0-9._-]/g, '_'));
  try {
    return await ensureWorkspace(dir);
  } catch (err) {
    // A file where the workspace should be stays one however often the call is tried again: the model is told at once.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR')
      throw ApplicationFailure.create({ type: 'WorkspaceNotADirectory', message: `the workspace ${dir} is not a directory`, nonRetryable: true });
    throw err;
  }
}

/** Binds a run to the worker that answers: its tools will run on that worker's own queue. */
export function createWorkspaceActivities(deps: ActivityDeps) {
  return {
    async claimWorkspace(): Promise<{ taskQueue: string | null }> {
      return { taskQueue: deps.workspaceQueue ?? null };
    },
  };
}
