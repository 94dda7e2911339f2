import path from 'node:path';
import { Context } from '@temporalio/activity';
import { FILE_CHANGING_TOOLS } from '../api/tools.js';
import type { ToolCall, ToolResult } from '../api/types.js';
import { tetherHome } from '../api/home.js';
import { baselineTaken, CHECKPOINT_FILE_CAP_BYTES, checkpointBaseline, checkpointReporting, checkpointRepo, restoreCheckpoint } from '../tools/checkpoint.js';
import { smallerThan, type TreeLimits } from '../tools/workspace-size.js';
import type { ActivityDeps } from './deps.js';
import { workspaceFor } from './workspace.js';

function checkpointRoot(deps: ActivityDeps): string {
  return deps.checkpointRoot ?? path.join(tetherHome(deps.env), 'checkpoints');
}

function repoOf(deps: ActivityDeps, runId: string): string {
  return checkpointRepo(checkpointRoot(deps), runId);
}

/** A workspace under both limits takes its baseline checkpoint in well under a second (git reads and hashes it all). */
const QUICK_BASELINE: TreeLimits = { entries: 2_000, bytes: 32 * 2 ** 20 };

/**
 * Whether a call of run `runId` that changes files would first have to take the baseline of `workspace` and that
 * could take long: it is not taken yet, and the workspace is not small (seconds for 100,000 files, or a few dozen files near the size cap).
 */
export async function slowBaselineAhead(deps: ActivityDeps, runId: string, call: ToolCall, workspace: string): Promise<boolean> {
  if (!FILE_CHANGING_TOOLS.has(call.name) || (await baselineTaken(repoOf(deps, runId)))) return false;
  return !(await smallerThan(workspace, QUICK_BASELINE).catch(() => false));
}

/** What no checkpoint holds, should a workspace contain it (`--workspace .` with the default `./.tether`): Tether's home and the checkpoints. */
function hiddenFromCheckpoints(deps: ActivityDeps): string[] {
  return [tetherHome(deps.env), checkpointRoot(deps)];
}

function warn(deps: ActivityDeps, runId: string, err: unknown): string {
  const message = `workspace checkpoint failed: ${(err as Error).message}`;
  deps.logger.warn({ runId }, message);
  return message;
}

/** What a run is told of files its checkpoints leave out for their size: a fork will not have them. */
function leftOutWarning(files: string[]): string {
  const named = files.slice(0, 5).join(', ') + (files.length > 5 ? ` and ${files.length - 5} more` : '');
  return `workspace checkpoints leave out files over ${CHECKPOINT_FILE_CAP_BYTES / 2 ** 20} MiB, which a fork will not have: ${named}`;
}

/** One tool call's checkpoint: whose, where, after which call, and how to keep its activity's heartbeat going meanwhile. */
export interface CallCheckpoint {
  runId: string;
  workspace: string;
  call: ToolCall;
  beat: () => void;
}

/**
 * A big workspace may take git a while: the activity keeps beating, or its heartbeat timeout would count the call as
 * lost. A kill reaches an activity in a heartbeat's answer, so the beat is what a kill during a checkpoint waits for;
 * a checkpoint shorter than one beat (most) sends none.
 */
const CHECKPOINT_BEAT_MS = 500;

async function beating<T>(beat: () => void, work: () => Promise<T>): Promise<T> {
  const timer = setInterval(beat, CHECKPOINT_BEAT_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** Before the run's first call that may change files: the workspace as the run found it. A failure costs the checkpoint, never the call. */
export async function checkpointBefore(deps: ActivityDeps, c: CallCheckpoint): Promise<string | null> {
  if (!FILE_CHANGING_TOOLS.has(c.call.name)) return null;
  return beating(c.beat, () => checkpointBaseline(repoOf(deps, c.runId), c.workspace, hiddenFromCheckpoints(deps))).catch((err) => {
    warn(deps, c.runId, err);
    return null;
  });
}

/** Adds the checkpoint of the workspace after the call to its result; a failed checkpoint is a warning on the run. */
export async function checkpointAfter(deps: ActivityDeps, c: CallCheckpoint, result: ToolResult, baseline: string | null): Promise<ToolResult> {
  if (!FILE_CHANGING_TOOLS.has(c.call.name)) return result;
  try {
    const { commit, leftOut } = await beating(c.beat, () =>
      checkpointReporting(repoOf(deps, c.runId), c.workspace, `after ${c.call.name} ${c.call.id}`, hiddenFromCheckpoints(deps)),
    );
    const warnings = leftOut.length ? [...(result.warnings ?? []), leftOutWarning(leftOut)] : result.warnings;
    return { ...result, checkpoint: { commit, ...(baseline ? { baseline } : {}) }, ...(warnings ? { warnings } : {}) };
  } catch (err) {
    return { ...result, warnings: [...(result.warnings ?? []), warn(deps, c.runId, err)] };
  }
}

/** Input of `restoreCheckpoint`: the fork, and the checkpoint (of run `from.runId`) its workspace starts from. */
export interface RestoreInput {
  runId: string;
  workspace?: string;
  from: { runId: string; commit: string };
}

/** Input of the checkpoints around a call the workflow itself carries out (`delegate`): whose, where, and which call. */
export interface CallCheckpointInput {
  runId: string;
  workspace?: string;
  workspaceOf?: string;
  call: ToolCall;
}

/** The activity that fills a fork's workspace from a checkpoint, on the worker that holds it. */
export function createCheckpointActivities(deps: ActivityDeps) {
  const around = async (input: CallCheckpointInput): Promise<CallCheckpoint> => {
    const ctx = Context.current();
    const workspace = await workspaceFor(deps, input.workspaceOf ?? input.runId, input.workspace);
    return { runId: input.runId, workspace, call: input.call, beat: () => ctx.heartbeat() };
  };
  return {
    /** The baseline before a delegated call, when it is the run's first that may change files. */
    async checkpointBeforeCall(input: CallCheckpointInput): Promise<string | null> {
      return checkpointBefore(deps, await around(input));
    },
    /** The checkpoint after a delegated call: what the sub-agent left in the workspace, for a fork at the parent's step. */
    async checkpointAfterCall(input: CallCheckpointInput & { baseline: string | null }): Promise<Pick<ToolResult, 'checkpoint' | 'warnings'>> {
      const { checkpoint, warnings } = await checkpointAfter(deps, await around(input), { success: true, output: '' }, input.baseline);
      return { ...(checkpoint ? { checkpoint } : {}), ...(warnings ? { warnings } : {}) };
    },
    async restoreCheckpoint(input: RestoreInput): Promise<{ commit: string }> {
      const workspace = await workspaceFor(deps, input.runId, input.workspace);
      const commit = await restoreCheckpoint(
        repoOf(deps, input.from.runId),
        input.from.commit,
        repoOf(deps, input.runId),
        workspace,
        hiddenFromCheckpoints(deps),
      );
      return { commit };
    },
  };
}
