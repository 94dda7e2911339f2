import { Context } from '@temporalio/activity';
import { FILE_ONLY_TOOLS } from '../api/tools.js';
import type { ToolCall, ToolResult } from '../api/types.js';
import type { ActivityDeps } from './deps.js';
import { slowBaselineAhead } from './checkpoints.js';
import { runCall, type ToolCallInput, workerSandbox } from './tools.js';
import { workspaceFor } from './workspace.js';

/** A file tool call for the local activity: with the queue of the worker that must hold the workspace (null: shared workspaces). */
export interface FileToolInput extends ToolCallInput {
  workspaceQueue: string | null;
}

/**
 * What the local activity did: ran the call (its id and name again, since a
 * local activity's input is not in the history; `tether history` finds its
 * arguments in the model's reply, so a large write is not stored twice), or
 * found that this worker does not hold the workspace.
 */
export type FileToolOutcome = { ran: ToolResult; call: Pick<ToolCall, 'id' | 'name'> } | { notHere: true };

/**
 * The file tools as a local activity: a call costs a marker in the history
 * instead of an activity's dispatch. It runs only on the worker holding the
 * workspace (with shared workspaces, every worker does); anywhere else it
 * answers "not here" and the workflow sends the call to the ordinary activity,
 * as it does the run's first call that changes files in a workspace too large
 * for its baseline checkpoint to be quick.
 * No heartbeat: a crash re-runs the workflow task and with it this call, which
 * is safe because these tools are idempotent, and a new worker is "not here".
 */
export function createFileToolActivities(deps: ActivityDeps) {
  const host = workerSandbox(deps);
  return {
    async runFileToolHere(input: FileToolInput): Promise<FileToolOutcome> {
      if ((deps.workspaceQueue ?? null) !== input.workspaceQueue || !FILE_ONLY_TOOLS.has(input.call.name)) return { notHere: true };
      const workspace = await workspaceFor(deps, input.workspaceOf ?? input.runId, input.workspace);
      // A local activity holds the run's workflow task, so a kill or a status waits for it: the baseline of a large
      // workspace (seconds) is taken by the ordinary activity, which a kill cancels at once.
      if (await slowBaselineAhead(deps, input.runId, input.call, workspace)) return { notHere: true };
      const signal = Context.current().cancellationSignal;
      return {
        ran: await runCall(deps, host, input, workspace, { signal, beat: () => {}, progress: () => {} }),
        call: { id: input.call.id, name: input.call.name },
      };
    },
  };
}
