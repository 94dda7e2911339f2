import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { homeWorkspaceProblem, tetherHome } from '../api/home.js';
import { ApplicationFailure } from '@temporalio/common';
import { ensureWorkspace } from '../tools/workspace.js';
import type { ActivityDeps } from './deps.js';

/** The run's workspace: the one its spec names, else a directory of its own under the worker's root. */
export async function workspaceFor(deps: ActivityDeps, runId: string, workspace: string | undefined): Promise<string> {
  const dir = workspace ?? path.join(deps.workspaceRoot, runId.replace(/[^A-Za-z0-9._-]/g, '_'));
  try {
    const home = workspace ? await realpath(tetherHome(deps.env)).catch(() => null) : null;
    // Asked before the directory is made (nothing is made inside the home) and of its real path after.
    const offLimits = (at: string) => {
      const problem = home && homeWorkspaceProblem(at, home);
      if (problem) throw ApplicationFailure.create({ type: 'WorkspaceOffLimits', message: problem, nonRetryable: true });
    };
    offLimits(path.resolve(dir));
    const real = await ensureWorkspace(dir);
    offLimits(real);
    return real;
  } catch (err) {
    if (err instanceof ApplicationFailure) throw err;
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
