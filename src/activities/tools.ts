import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { trace } from '@opentelemetry/api';
import { Context } from '@temporalio/activity';
import type { ToolCall, ToolResult } from '../api/types.js';
import { executeTool } from '../tools/execute.js';
import { isProcessGroupAlive, killProcessGroup } from '../tools/process-runner.js';
import { toolDefinition } from '../tools/registry.js';
import type { ActivityDeps } from './deps.js';
import { workspaceFor } from './workspace.js';

export interface ToolCallInput {
  runId: string;
  workspace?: string;
  call: ToolCall;
  timeoutMs: number;
}

/** Progress a tool reports in its heartbeats; a retry after a crash reads the last one. */
interface ToolHeartbeat {
  callId: string;
  host: string;
  pid?: number;
  pgid?: number;
  bytes?: number;
  elapsedMs?: number;
  tail?: string;
}

/** The tool activity: runs one tool call in the run's workspace, heartbeating, dying with its process tree on cancel. */
export function createToolActivities(deps: ActivityDeps) {
  return {
    async runTool(input: ToolCallInput): Promise<ToolResult> {
      const ctx = Context.current();
      const { call } = input;
      const workspace = await workspaceFor(deps, input.runId, input.workspace);
      const definition = toolDefinition(call.name as never);
      const previous = ctx.info.heartbeatDetails as ToolHeartbeat | undefined;
      if (ctx.info.attempt > 1 && previous?.callId === call.id && definition && !definition.idempotent) {
        return interruptionNotice(deps, workspace, previous);
      }
      const beat: ToolHeartbeat = { callId: call.id, host: deps.hostname };
      ctx.heartbeat(beat);
      const started = Date.now();
      const result = await executeTool(call.name as 'shell', call.args as never, {
        workspace,
        callId: call.id,
        timeoutMs: input.timeoutMs,
        signal: ctx.cancellationSignal,
        env: deps.env,
        onProgress: (p) => ctx.heartbeat({ ...beat, ...p, tail: p.tail.slice(-500) }),
      });
      deps.metrics?.toolCall(call.name, result.success ? 'ok' : 'error', Date.now() - started);
      trace.getActiveSpan()?.setAttributes({ 'tether.run_id': input.runId, 'tether.tool': call.name, 'tether.tool.success': result.success });
      return result;
    },
  };
}

/**
 * A non-idempotent tool whose worker died mid-call is not run again blindly:
 * the model is told what happened and what the call had printed, and decides.
 */
async function interruptionNotice(deps: ActivityDeps, workspace: string, last: ToolHeartbeat): Promise<ToolResult> {
  if (last.pgid && last.host === deps.hostname && isProcessGroupAlive(last.pgid)) {
    // The crashed worker's command is still running unsupervised; nobody can collect its result.
    await killProcessGroup(last.pgid, 2_000);
  }
  const logFile = path.join(workspace, '.tether', 'outputs', `${last.callId}.log`);
  const output = await readFile(logFile, 'utf8').then((text) => text.slice(-4_000), () => last.tail ?? '');
  const ran = last.elapsedMs !== undefined ? ` after running for ${Math.round(last.elapsedMs / 1000)}s` : '';
  return {
    success: false,
    interrupted: true,
    error: `interrupted: the worker running this command stopped${ran}; it was not run again because it may have side effects. Check the workspace and decide whether to run it again.`,
    output,
  };
}
