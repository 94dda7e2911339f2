import {
  CancellationScope,
  ChildWorkflowFailure,
  condition,
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  setHandler,
  startChild,
  ApplicationFailure,
} from '@temporalio/workflow';
import { childEmergencySignal, killSignal, type ChildEmergency } from '../api/messages.js';
import type { RunSpecInput, ToolName } from '../api/spec.js';
import type { RunResult, ToolCall, ToolResult } from '../api/types.js';
import type { RunContext } from './context.js';

/**
 * Sub-agents: the `delegate` tool runs a child `agentRun` with limits no larger
 * than what the parent has left. A child that trips its emergency stop tells
 * the parent at once, and the parent's call returns `emergency_stop` while the
 * child stays stopped for an operator. A parent that is killed kills its children.
 */
export function createDelegation(ctx: RunContext) {
  const stopped = new Map<string, ChildEmergency>();
  const active = new Set<string>();
  setHandler(childEmergencySignal, (report) => {
    stopped.set(report.childId, report);
  });

  async function delegate(call: ToolCall, args: { goal: string; model?: string; tools?: ToolName[] }): Promise<ToolResult> {
    const { run, spec, runId } = ctx;
    const childId = `${runId}.delegate-${run.step}-${call.id.replace(/[^A-Za-z0-9_-]/g, '').slice(-12) || run.children.length}`;
    const now = Date.now();
    const remainingSteps = Math.max(1, run.limits.steps - run.step);
    const remainingMs = Math.max(1_000, run.limits.remainingMs(now));
    const remainingBudget = spec.limits.budgetUsd !== undefined ? Math.max(0.000001, (run.budget.budgetUsd ?? 0) - run.costUsd) : undefined;
    const childSpec: RunSpecInput = {
      goal: args.goal,
      model: args.model ?? spec.model,
      fallbackModels: spec.fallbackModels,
      tools: (args.tools ?? spec.tools).filter((t) => spec.tools.includes(t)),
      ...(spec.workspace ? { workspace: spec.workspace } : {}),
      limits: {
        ...spec.limits,
        maxSteps: Math.min(spec.limits.maxSteps, remainingSteps),
        maxRuntime: remainingMs,
        ...(remainingBudget !== undefined ? { budgetUsd: remainingBudget } : {}),
      },
      critic: spec.critic,
    };
    run.children.push(childId);
    active.add(childId);
    ctx.publish();
    try {
      const handle = await startChild('agentRun', {
        workflowId: childId,
        args: [childSpec],
        // A parent that ends takes its children with it: none outlives it unnoticed.
        parentClosePolicy: ParentClosePolicy.TERMINATE,
      });
      const result = handle.result() as Promise<RunResult>;
      const ended = await Promise.race([
        result.then((r) => ({ result: r }), (err: unknown) => ({ error: err })),
        condition(() => stopped.has(childId)).then(() => ({ stopped: stopped.get(childId)! })),
      ]);
      if ('stopped' in ended) {
        run.addCost(ended.stopped.costUsd, Date.now());
        log.warn(`delegated run ${childId} tripped its emergency stop: ${ended.stopped.reason}`, { runId });
        return { success: false, error: 'emergency_stop', output: `sub-agent ${childId} is emergency-stopped (${ended.stopped.reason}); it waits for an operator` };
      }
      const childResult = 'result' in ended ? ended.result : resultOf(ended.error);
      if (!childResult) throw (ended as { error: unknown }).error;
      run.addCost(childResult.costUsd, Date.now());
      const success = childResult.status === 'completed';
      return {
        success,
        ...(success ? {} : { error: `sub-agent ended ${childResult.status}: ${childResult.cause ?? ''}` }),
        output: `sub-agent ${childId} ${childResult.status} after ${childResult.steps} steps${childResult.summary ? `: ${childResult.summary}` : ''}`,
      };
    } finally {
      active.delete(childId);
    }
  }

  /** Sends kill to every child still running; used when the parent is killed. */
  function killChildren(reason: string): void {
    for (const childId of active) {
      void CancellationScope.nonCancellable(() => getExternalWorkflowHandle(childId).signal(killSignal, { reason: `parent killed: ${reason}` })).catch((err) =>
        log.warn(`could not kill child ${childId}: ${(err as Error).message}`),
      );
    }
  }

  return { delegate, killChildren };
}

function resultOf(error: unknown): RunResult | undefined {
  if (error instanceof ChildWorkflowFailure && error.cause instanceof ApplicationFailure) return error.cause.details?.[0] as RunResult | undefined;
  return undefined;
}
