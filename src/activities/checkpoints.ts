import path from 'node:path';
import type { ToolCall, ToolResult } from '../api/types.js';
import { tetherHome } from '../api/home.js';
import { checkpointBaseline, checkpointRepo, checkpointWorkspace, restoreCheckpoint } from '../tools/checkpoint.js';
import type { ActivityDeps } from './deps.js';
import { workspaceFor } from './workspace.js';

/** The tools whose calls may change the workspace: each is followed by a checkpoint. */
const CHANGES_FILES = new Set(['shell', 'write_file']);

function repoOf(deps: ActivityDeps, runId: string): string {
  return checkpointRepo(deps.checkpointRoot ?? path.join(tetherHome(deps.env), 'checkpoints'), runId);
}

function warn(deps: ActivityDeps, runId: string, err: unknown): string {
  const message = `workspace checkpoint failed: ${(err as Error).message}`;
  deps.logger.warn({ runId }, message);
  return message;
}

/** Before the run's first call that may change files: the workspace as the run found it. A failure costs the checkpoint, never the call. */
export async function checkpointBefore(deps: ActivityDeps, runId: string, workspace: string, call: ToolCall): Promise<string | null> {
  if (!CHANGES_FILES.has(call.name)) return null;
  return checkpointBaseline(repoOf(deps, runId), workspace).catch((err) => {
    warn(deps, runId, err);
    return null;
  });
}

/** Adds the checkpoint of the workspace after `call` to its result; a failed checkpoint is a warning on the run. */
export async function checkpointAfter(
  deps: ActivityDeps,
  runId: string,
  workspace: string,
  call: ToolCall,
  result: ToolResult,
  baseline: string | null,
): Promise<ToolResult> {
  if (!CHANGES_FILES.has(call.name)) return result;
  try {
    const commit = await checkpointWorkspace(repoOf(deps, runId), workspace, `after ${call.name} ${call.id}`);
    return { ...result, checkpoint: { commit, ...(baseline ? { baseline } : {}) } };
  } catch (err) {
    return { ...result, warnings: [...(result.warnings ?? []), warn(deps, runId, err)] };
  }
}

/** Input of `restoreCheckpoint`: the fork, and the checkpoint (of run `from.runId`) its workspace starts from. */
export interface RestoreInput {
  runId: string;
  workspace?: string;
  from: { runId: string; commit: string };
}

/** The activity that fills a fork's workspace from a checkpoint, on the worker that holds it. */
export function createCheckpointActivities(deps: ActivityDeps) {
  return {
    async restoreCheckpoint(input: RestoreInput): Promise<{ commit: string }> {
      const workspace = await workspaceFor(deps, input.runId, input.workspace);
      const commit = await restoreCheckpoint(repoOf(deps, input.from.runId), input.from.commit, repoOf(deps, input.runId), workspace);
      return { commit };
    },
  };
}
