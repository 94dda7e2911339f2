import path from 'node:path';
import { ensureWorkspace } from '../tools/workspace.js';
import type { ActivityDeps } from './deps.js';

/** The run's workspace: the one its spec names, else a directory of its own under the worker's root. */
export function workspaceFor(deps: ActivityDeps, runId: string, workspace: string | undefined): Promise<string> {
  const dir = workspace ?? path.join(deps.workspaceRoot, runId.replace(/[^A-Za-z0-9._-]/g, '_'));
  return ensureWorkspace(dir);
}

/** Binds a run to the worker that answers: its tools will run on that worker's own queue. */
export function createWorkspaceActivities(deps: ActivityDeps) {
  return {
    async claimWorkspace(): Promise<{ taskQueue: string | null }> {
      return { taskQueue: deps.workspaceQueue ?? null };
    },
  };
}
