import { trace } from '@opentelemetry/api';
import { Context } from '@temporalio/activity';
import type { SandboxSpec } from '../api/spec.js';
import type { ToolCall, ToolResult } from '../api/types.js';
import { toolEnvPassThrough } from '../tools/env.js';
import { executeTool } from '../tools/execute.js';
import { type SandboxHost, sandboxHost } from '../tools/host-probe.js';
import { LOG_HEAD_BYTES, outputLogPath } from '../tools/output-log.js';
import { type CallTrace, cleanUpInterruptedCall } from '../tools/orphans.js';
import { toolDefinition } from '../api/tools.js';
import { readBounded } from '../tools/safe-read.js';
import { resolveInWorkspace } from '../tools/workspace.js';
import { type CallInFlight, CallsInFlight } from './calls-in-flight.js';
import { checkpointAfter, checkpointBefore } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';
import { executionClosed } from './run-query.js';
import { workspaceFor } from './workspace.js';

export interface ToolCallInput {
  runId: string;
  workspace?: string;
  call: ToolCall;
  timeoutMs: number;
  /** The run whose workspace the call uses when the spec names none: a sub-agent works in its parent's. */
  workspaceOf?: string;
  /** The run's sandbox settings; absent from runs started before they existed (defaults apply). */
  sandbox?: SandboxSpec;
}

/** Progress a tool reports in its heartbeats; a retry after a crash reads the last one. */
export interface ToolHeartbeat extends CallTrace {
  callId: string;
  bytes?: number;
  elapsedMs?: number;
  tail?: string;
}

const announced = new WeakSet<ActivityDeps>();

/** The machine's sandbox, probed when the worker starts; what it lacks is said once in the worker's log. */
export function workerSandbox(deps: ActivityDeps): () => Promise<SandboxHost> {
  const host = deps.sandboxHost ?? sandboxHost;
  if (announced.has(deps)) return host;
  announced.add(deps);
  void host().then((h) => {
    if (!h.bwrap.ok) deps.logger.warn({ reason: h.bwrap.reason }, 'sandbox: bwrap is unavailable; runs without an explicit sandbox.mode get containment only');
    if (!h.namespaces.ok && !h.bwrap.ok) deps.logger.warn({ reason: h.namespaces.reason }, 'sandbox: no PID or network namespaces either');
    if (!h.cgroup) deps.logger.warn({ reason: h.cgroupProblem }, 'sandbox: no call cgroups; memory and process limits fall back to rlimits');
  });
  const { refused } = toolEnvPassThrough(deps.env);
  if (refused.length) deps.logger.warn({ refused }, 'TETHER_TOOL_ENV names Temporal, Tether or provider variables; they are never given to tools');
  return host;
}

/** The tool activity: runs one tool call in the run's workspace, heartbeating, dying with its process tree on cancel. */
export function createToolActivities(deps: ActivityDeps) {
  const host = workerSandbox(deps);
  const inFlight = new CallsInFlight();
  return {
    async runTool(input: ToolCallInput): Promise<ToolResult> {
      const ctx = Context.current();
      const { call } = input;
      const workspace = await workspaceFor(deps, input.workspaceOf ?? input.runId, input.workspace);
      const definition = toolDefinition(call.name);
      const once = definition !== undefined && !definition.idempotent;
      // A standalone activity has no workflow execution: its run id keys it.
      const execution = ctx.info.workflowExecution;
      const key = `${execution?.workflowId ?? input.runId}/${execution?.runId ?? ''}/${call.id}`;
      const previous = ctx.info.heartbeatDetails as ToolHeartbeat | undefined;
      if (ctx.info.attempt > 1 && previous?.callId === call.id && once) {
        const earlier = inFlight.find(key);
        if (earlier) return takeEarlierAttempt(ctx, earlier, previous);
        // The interrupted call may have changed files: the checkpoint says what it left.
        const notice = await interruptionNotice(deps, workspace, previous);
        return checkpointAfter(deps, { runId: input.runId, workspace, call, beat: () => ctx.heartbeat(previous) }, notice, null);
      }
      let beat: ToolHeartbeat = { callId: call.id };
      const live = (signal: AbortSignal): CallLiveness => ({
        signal,
        // Checkpoints beat with the call's latest details, so a retry after a crash still knows the call ran.
        beat: () => ctx.heartbeat(beat),
        progress: (next) => {
          beat = next;
          ctx.heartbeat(beat);
        },
      });
      if (!once) return runCall(deps, host, input, workspace, live(ctx.cancellationSignal));
      const running = inFlight.start(key, (signal) => runCall(deps, host, input, workspace, live(signal)));
      whenCancelled(ctx, async (reason) => {
        const why = ctx.cancellationDetails;
        if (!why?.notFound && !why?.timedOut) return running.stop(reason);
        // "Not found" also means the run itself is gone (terminated, or ended with its parent): nothing will retry the call.
        if (why.notFound && execution && (await executionClosed(deps, execution.workflowId, execution.runId, RUN_GONE_CHECK_MS)) === true)
          return running.stop(reason);
        inFlight.abandoned(key, reason);
      });
      return running.result;
    },
  };
}

/** How long a call whose attempt the server no longer knows waits to hear whether its run is still open. */
const RUN_GONE_CHECK_MS = 5_000;

/**
 * What to do when a non-idempotent call's activity is cancelled: stop it,
 * unless the server gave up on the attempt while the run goes on (it was away
 * past the heartbeat timeout). Then the command runs on for a while, and a
 * retry takes its result; with no retry it is stopped (src/activities/calls-in-flight.ts).
 * A run that is gone stops it at once.
 */
function whenCancelled(ctx: Context, act: (reason: unknown) => void | Promise<void>): void {
  if (ctx.cancellationSignal.aborted) void act(ctx.cancellationSignal.reason);
  else ctx.cancellationSignal.addEventListener('abort', () => void act(ctx.cancellationSignal.reason), { once: true });
}

/** What a retry says when it took the result of the attempt the server had given up on. */
const TAKEN_OVER =
  'the Temporal server lost track of this call while it was unreachable and sent it again; the command ran once, on this worker, and this is its result';

/** A retry of a call this worker still runs or has run: waits for that attempt (heartbeating), and is its result. A cancel stops it. */
async function takeEarlierAttempt(ctx: Context, earlier: CallInFlight, previous: ToolHeartbeat): Promise<ToolResult> {
  const timer = setInterval(() => ctx.heartbeat(previous), 2_000);
  const stop = () => earlier.stop(ctx.cancellationSignal.reason);
  ctx.cancellationSignal.addEventListener('abort', stop, { once: true });
  try {
    const result = await earlier.result;
    return { ...result, warnings: [...(result.warnings ?? []), TAKEN_OVER] };
  } finally {
    clearInterval(timer);
    ctx.cancellationSignal.removeEventListener('abort', stop);
  }
}

/** How a call reports that it is alive: the tool activity heartbeats; a local activity has no heartbeat. */
export interface CallLiveness {
  signal: AbortSignal;
  beat: () => void;
  progress: (beat: ToolHeartbeat) => void;
}

/** Runs one tool call in `workspace`, with the workspace checkpoints around the calls that may change files. */
export async function runCall(
  deps: ActivityDeps,
  host: () => Promise<SandboxHost>,
  input: ToolCallInput,
  workspace: string,
  live: CallLiveness,
): Promise<ToolResult> {
  const { call } = input;
  const checkpoint = { runId: input.runId, workspace, call, beat: live.beat };
  // A baseline of a large workspace can take seconds: a kill that comes meanwhile ends the call at once, and nothing
  // follows it (the baseline finishes on its own; a checkpoint changes nothing in the workspace).
  const baseline = await untilAborted(live.signal, checkpointBefore(deps, checkpoint));
  live.beat();
  const started = Date.now();
  const result = await executeTool(call.name, call.args, {
    workspace,
    callId: call.id,
    timeoutMs: input.timeoutMs,
    signal: live.signal,
    env: deps.env,
    sandbox: input.sandbox,
    host: await host(),
    onProgress: (p) =>
      live.progress({ callId: call.id, bytes: p.bytes, elapsedMs: p.elapsedMs, tail: p.tail.slice(-500), identity: p.identity, cgroup: p.cgroup }),
  });
  deps.metrics?.toolCall(call.name, result.success ? 'ok' : 'error', Date.now() - started);
  trace.getActiveSpan()?.setAttributes({ 'tether.run_id': input.runId, 'tether.tool': call.name, 'tether.tool.success': result.success });
  return checkpointAfter(deps, checkpoint, result, baseline);
}

/** `work`'s value, or the abort's reason thrown as soon as `signal` aborts. */
function untilAborted<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/** The end of the interrupted call's output: from its log, unless the log was capped before the end (then the heartbeat's tail). */
async function lastOutput(workspace: string, last: ToolHeartbeat): Promise<string> {
  if ((last.bytes ?? 0) > LOG_HEAD_BYTES) return last.tail ?? '';
  try {
    const read = await readBounded(await resolveInWorkspace(workspace, outputLogPath(last.callId)), 'the output log', 64_000);
    return read.ok ? read.text.slice(-4_000) : (last.tail ?? '');
  } catch {
    return last.tail ?? '';
  }
}

/**
 * A non-idempotent tool whose worker died mid-call is not run again blindly:
 * what it left running is ended (if provably its own), and the model is told
 * what happened and what the call had printed, and decides.
 */
async function interruptionNotice(deps: ActivityDeps, workspace: string, last: ToolHeartbeat): Promise<ToolResult> {
  const cleaned = await cleanUpInterruptedCall(last);
  if (cleaned === 'not-ours')
    deps.logger.warn({ callId: last.callId, pid: last.identity?.pid }, 'interrupted call: its pid now belongs to another process; left alone');
  const ran = last.elapsedMs !== undefined ? ` after running for ${Math.round(last.elapsedMs / 1000)}s` : '';
  return {
    success: false,
    interrupted: true,
    error: `interrupted: the worker running this command stopped${ran}; it was not run again because it may have side effects. Check the workspace and decide whether to run it again.`,
    output: await lastOutput(workspace, last),
  };
}
