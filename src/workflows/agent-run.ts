import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  TimeoutFailure,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import { childEmergencySignal } from '../api/messages.js';
import { describeIssues, runSpecSchema, type RunSpec, type RunSpecInput, type ToolName } from '../api/spec.js';
import type { RunResult, ToolCall, ToolResult } from '../api/types.js';
import { toolResultText } from '../run/prompt.js';
import { RunState, type RunSnapshot } from '../run/run-state.js';
import { diagnosticMessage, signatureOf } from '../run/stuck-detector.js';
import { parseToolArgs, toolDefinition } from '../tools/registry.js';
import { activityProxies, claimWorkspace, metricsSink, type RunContext } from './context.js';
import { registerControlHandlers } from './control.js';
import { createCriticLink } from './critic-link.js';
import { createDelegation } from './delegation.js';
import { askModel } from './model-call.js';
import { inSpan } from './tracing.js';
import { createVisibility } from './visibility.js';

/** What a run carries into its next execution when it continues as new. */
export interface AgentRunCarry {
  snapshot?: RunSnapshot;
  /** Set when the run starts while the fleet's emergency stop is active: it starts stopped. */
  fleetStop?: string;
  criticStarted?: boolean;
  workspaceQueue?: string | null;
}

/**
 * One agent run: ask the model, run the tools it calls, repeat until it
 * finishes (through the verification gate) or a limit, an operator or the
 * safety system ends it. Every decision lands in this workflow's history.
 */
export async function agentRun(input: RunSpecInput, carry: AgentRunCarry = {}): Promise<RunResult> {
  const spec = validateSpec(input);
  const runId = workflowInfo().workflowId;
  const run = new RunState(runId, spec, Date.now(), Date.now() + initialRuntimeMs(spec), carry.snapshot);
  const metrics = metricsSink();
  const ctx: RunContext = {
    runId,
    spec,
    run,
    acts: activityProxies(spec, carry.workspaceQueue ?? null),
    workspaceQueue: carry.workspaceQueue ?? null,
    sent: { epoch: -1, length: 0 },
    workerGone(err) {
      // The bound worker did not pick up work in time: it is gone, and so is its workspace.
      return ctx.workspaceQueue !== null && err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_START';
    },
    async rebind() {
      const lost = ctx.workspaceQueue;
      await bindWorkspace();
      log.warn(`worker ${lost} is gone; the run moved to ${ctx.workspaceQueue} with a fresh workspace`, { runId });
      return "interrupted: the worker that held this run's workspace is gone. The run moved to another worker with a fresh, empty workspace: files written before are lost and the call in flight did not complete. Recreate what you need and go on.";
    },
    metrics,
    publish: createVisibility(run),
    inFlight: null,
    async interruptible<T>(work: () => Promise<T>): Promise<T | undefined> {
      const scope = new CancellationScope();
      ctx.inFlight = scope;
      try {
        return await scope.run(work);
      } catch (err) {
        if (isCancellation(err) && run.ended) return undefined;
        throw err;
      } finally {
        ctx.inFlight = null;
      }
    },
    noteTrip(reason) {
      if (!reason) return;
      log.error(`emergency stop tripped: ${reason}`, { runId, consecutiveErrors: run.safety.errors });
      metrics.emergencyStop('tripped', 'threshold');
      tellParentStopped(run, reason);
    },
  };
  const delegation = createDelegation(ctx);
  const critic = createCriticLink(ctx, carry.criticStarted ?? false);

  if (carry.fleetStop && !carry.snapshot) {
    run.apply('emergencyStop', { reason: `fleet: ${carry.fleetStop}` }, Date.now());
    metrics.emergencyStop('tripped', 'fleet');
  }
  let killRequestedAt: number | null = null;
  registerControlHandlers(run, (name, via) => {
    metrics.control(name, via);
    if (name === 'kill') {
      killRequestedAt = Date.now();
      delegation.killChildren(run.status(Date.now()).cause ?? 'killed');
      ctx.inFlight?.cancel();
    }
    if (name === 'emergencyStop') {
      metrics.emergencyStop('tripped', 'manual');
      tellParentStopped(run, run.safety.status().reason ?? 'manual');
    }
    if (name === 'clearEmergency') metrics.emergencyStop('cleared', 'manual');
    ctx.publish();
  });
  if (!carry.snapshot) metrics.runStarted(spec.model);
  ctx.publish();
  // patched(): runs recorded before workspace binding replay without the claim.
  if (carry.workspaceQueue === undefined && patched('workspace-binding')) await bindWorkspace();
  await critic.start();

  /** Binds the run's workspace-bound activities (and its model calls) to the worker that answers the claim. */
  async function bindWorkspace(): Promise<void> {
    const { taskQueue } = await claimWorkspace();
    ctx.workspaceQueue = taskQueue;
    ctx.acts = activityProxies(spec, taskQueue);
    ctx.sent = { epoch: -1, length: 0 };
  }

  function toolLost(notice: string): ToolResult {
    return { success: false, interrupted: true, error: notice, output: '' };
  }

  async function enforceDeadline(): Promise<void> {
    while (!run.ended) {
      if (run.paused) {
        await condition(() => !run.paused || run.ended);
        continue;
      }
      const remaining = run.limits.remainingMs(Date.now());
      if (remaining <= 0) {
        run.end({ status: 'timeout', cause: `maxRuntime reached (deadline ${new Date(run.limits.deadline(Date.now())).toISOString()})` }, Date.now());
        ctx.inFlight?.cancel();
        ctx.publish();
        return;
      }
      const version = run.limits.version;
      await condition(() => run.ended || run.paused || run.limits.version !== version, remaining);
    }
  }

  async function waitWhilePaused(): Promise<void> {
    while (run.paused && !run.ended) {
      ctx.publish();
      publishWarnings();
      log.warn(`run paused: ${run.state}`, { runId, state: run.state, reason: run.safety.status().reason });
      const resumed = await condition(() => !run.paused || run.ended, spec.limits.maxPause);
      if (!resumed) run.end({ status: 'timeout', cause: `paused (${run.state}) longer than maxPause with nobody acting` }, Date.now());
    }
    ctx.publish();
  }

  let warningsShown = run.warnings.length;
  /** Warnings go into the memo so they are in the history and the Temporal UI, not only in `status`. */
  function publishWarnings(): void {
    if (run.warnings.length === warningsShown) return;
    for (const warning of run.warnings.slice(warningsShown)) log.warn(`warning: ${warning}`, { runId });
    warningsShown = run.warnings.length;
    upsertMemo({ warnings: run.warnings.slice(-20) });
  }

  function recordResult(call: ToolCall, result: ToolResult, counts = true): void {
    ctx.noteTrip(run.recordToolResult(call, result, toolResultText(result), Date.now(), counts));
    if (!counts || run.ended) return;
    const verdict = run.stuck.record(signatureOf(call.name, call.args, result));
    if (!verdict.stuck) return;
    if (!run.stuckWarned) {
      run.stuckWarned = true;
      run.stuck.reset();
      run.apply('steer', { message: diagnosticMessage(verdict) }, Date.now());
      log.warn(`stuck loop detected (${verdict.kind}); steering the model`, { runId, pattern: verdict.pattern });
    } else {
      run.end({ status: 'stuck', cause: `stuck in a loop (${verdict.kind}) after a diagnostic steer`, pattern: verdict.pattern }, Date.now());
    }
  }

  async function finish(summary: string, call?: ToolCall): Promise<void> {
    if (!spec.verify) {
      if (call) recordResult(call, { success: true, output: 'Run finished.' }, false);
      run.end({ status: 'completed', summary }, Date.now());
      return;
    }
    run.verifyAttempts += 1;
    const attempt = run.verifyAttempts;
    let outcome;
    try {
      outcome = await ctx.interruptible(() =>
        ctx.acts.runVerification({ runId, workspace: spec.workspace, command: spec.verify!.command, timeoutMs: spec.limits.toolTimeout, attempt }),
      );
    } catch (err) {
      if (!ctx.workerGone(err)) throw err;
      run.verifyAttempts -= 1;
      const notice = await ctx.rebind();
      if (call) recordResult(call, toolLost(notice), false);
      else run.addUserMessage(notice, 'notice');
      return;
    }
    if (!outcome) return;
    if (outcome.passed) {
      if (call) recordResult(call, { success: true, output: 'Verification passed. Run finished.' }, false);
      run.end({ status: 'completed', summary, verify: outcome }, Date.now());
      return;
    }
    const feedback = `Verification failed (attempt ${attempt} of ${spec.verify.maxAttempts}): \`${spec.verify.command}\` exited with ${outcome.exitCode}.\n${outcome.output}`;
    // Verification has its own attempt budget, so its failures do not count towards the emergency stop.
    if (call) recordResult(call, { success: false, error: 'verification failed', output: feedback }, false);
    else run.addUserMessage(feedback, 'verify');
    if (attempt >= spec.verify.maxAttempts) {
      run.end({ status: 'needs_fix', cause: `verification failed ${attempt} times: ${spec.verify.command}`, summary, verify: outcome }, Date.now());
    }
  }

  async function executeCall(call: ToolCall): Promise<void> {
    run.noteToolStart(call.name, Date.now());
    critic.report();
    if (!toolDefinition(call.name as ToolName) || !spec.tools.includes(call.name as ToolName)) {
      return recordResult(call, { success: false, error: `unknown tool "${call.name}"; available: ${spec.tools.join(', ')}`, output: '' });
    }
    if (call.argsError) return recordResult(call, { success: false, error: `invalid arguments (not JSON): ${call.argsError}`, output: '' });
    const parsed = parseToolArgs(call.name as ToolName, call.args);
    if (!parsed.ok) return recordResult(call, { success: false, error: `invalid arguments: ${parsed.error}`, output: '' });
    const args = parsed.args as Record<string, never>;
    switch (call.name) {
      case 'finish':
        return finish(String(args.summary), call);
      case 'ask_user':
        return askUser(call, String(args.question));
      case 'delegate': {
        const result = await delegation.delegate(call, args as unknown as Parameters<typeof delegation.delegate>[1]);
        return recordResult(call, result);
      }
      default: {
        const result = await runToolActivity(call);
        if (result) recordResult(call, result, !result.interrupted);
      }
    }
  }

  async function runToolActivity(call: ToolCall): Promise<ToolResult | undefined> {
    try {
      return await ctx.interruptible(() => ctx.acts.runTool({ runId, workspace: spec.workspace, call, timeoutMs: spec.limits.toolTimeout }));
    } catch (err) {
      if (ctx.workerGone(err)) return toolLost(await ctx.rebind());
      if (!(err instanceof ActivityFailure)) throw err;
      return { success: false, error: `tool could not be run: ${err.cause?.message ?? err.message}`, output: '' };
    }
  }

  async function askUser(call: ToolCall, question: string): Promise<void> {
    run.ask(question, Date.now());
    await waitWhilePaused();
    if (run.ended) return;
    recordResult(call, { success: true, output: run.takeAnswer() ?? '' }, false);
  }

  async function step(): Promise<void> {
    run.takeSteers();
    critic.report();
    const reply = await askModel(ctx);
    if (!reply || run.ended) return;
    run.addWarnings(reply.warnings);
    run.breakers = reply.breakers;
    run.recordModelReply(reply, Date.now());
    metrics.step(reply.model);
    if (reply.toolCalls.length === 0) return finish(reply.text);
    for (const call of reply.toolCalls) {
      if (run.ended) break;
      if (run.paused) {
        // The model expects a result for every call it made; these were never started.
        recordResult(call, { success: false, error: `not run: the run is ${run.state}`, output: '' }, false);
        continue;
      }
      await executeCall(call);
      ctx.publish();
    }
  }

  function shouldContinueAsNew(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= spec.limits.maxHistoryEvents;
  }

  enforceDeadline().catch((err) => {
    if (!isCancellation(err)) throw err;
  });
  try {
    while (!run.ended) {
      await waitWhilePaused();
      if (run.ended) break;
      if (run.stepsExhausted) {
        run.end({ status: 'failed', cause: `maxSteps reached (${run.limits.steps})` }, Date.now());
        break;
      }
      if (shouldContinueAsNew()) {
        await condition(allHandlersFinished);
        if (!run.ended) {
          log.info(`continuing as new after ${run.step} steps`, { runId, historyLength: workflowInfo().historyLength });
          await continueAsNew<typeof agentRun>(spec, { snapshot: { ...run.snapshot(), continuedAsNew: run.continuedAsNew + 1 }, criticStarted: critic.started, workspaceQueue: ctx.workspaceQueue });
        }
      }
      try {
        await inSpan(`step ${run.step + 1}`, { 'tether.run_id': runId, 'tether.step': run.step + 1 }, step);
      } catch (err) {
        if (isCancellation(err)) throw err;
        // A bug or an unexpected value must not crash the run: it is a failed step, counted like any other.
        log.error(`unexpected error in step ${run.step}: ${(err as Error).message}`, { runId });
        ctx.noteTrip(run.recordFailure(`unexpected error: ${(err as Error).message}`, Date.now()));
      }
      ctx.publish();
      publishWarnings();
    }
  } catch (err) {
    if (!isCancellation(err) || run.ended) throw err;
    run.end({ status: 'cancelled', cause: 'cancelled through Temporal' }, Date.now());
    await CancellationScope.nonCancellable(async () => {
      ctx.publish();
      await critic.end();
    });
    metrics.runEnded('cancelled', spec.model, run.step, run.costUsd);
    throw err;
  }
  ctx.publish();
  publishWarnings();
  await critic.end();
  const result = run.result();
  metrics.runEnded(result.status, spec.model, result.steps, result.costUsd);
  // Workflow time from the kill to here: in-flight work has been cancelled and acknowledged.
  if (result.status === 'killed' && killRequestedAt !== null) metrics.kill(Date.now() - killRequestedAt);
  log.info(`run ended: ${result.status}`, { runId, status: result.status, steps: result.steps, cause: result.cause });
  if (result.status === 'completed') return result;
  throw ApplicationFailure.create({ type: result.status, message: result.cause ?? result.status, details: [result], nonRetryable: true });
}

/** A delegated run tells its parent at once when it stops, so the parent's delegate call can return. */
function tellParentStopped(run: RunState, reason: string): void {
  const parent = workflowInfo().parent;
  if (!parent) return;
  void CancellationScope.nonCancellable(() =>
    getExternalWorkflowHandle(parent.workflowId).signal(childEmergencySignal, { childId: run.runId, reason, costUsd: run.costUsd }),
  ).catch((err) => log.warn(`could not tell parent ${parent.workflowId} of the emergency stop: ${(err as Error).message}`));
}

function validateSpec(input: RunSpecInput): RunSpec {
  const parsed = runSpecSchema.safeParse(input);
  if (!parsed.success) {
    throw ApplicationFailure.create({ type: 'InvalidRunSpec', message: `invalid RunSpec: ${describeIssues(parsed.error)}`, nonRetryable: true });
  }
  return parsed.data;
}

/** Without maxRuntime the critic's backstop bounds the run; with no critic, 30 minutes. */
function initialRuntimeMs(spec: RunSpec): number {
  if (spec.limits.maxRuntime !== undefined) return spec.limits.maxRuntime;
  if (spec.critic.policy === 'off') return 30 * 60_000;
  return spec.critic.softTimeout * spec.critic.backstopMultiplier;
}
