import type { RunSpec, RunSpecInput } from '../api/spec.js';
import type { ToolArgs } from '../api/tools.js';
import type { ChildEmergency, RunResult, ToolResult } from '../api/types.js';

/** What the parent has left when it delegates: a child never gets more. */
export interface Headroom {
  steps: number;
  ms: number;
  /** Dollars left under the parent's budget; undefined when the parent has none. */
  usd: number | undefined;
}

/** The id of a sub-agent: the parent's id, the step and the call, so it is stable on replay and readable in lists. */
export function subAgentId(parentId: string, step: number, callId: string, siblings: number): string {
  return `${parentId}.delegate-${step}-${callId.replace(/[^A-Za-z0-9_-]/g, '').slice(-12) || siblings}`;
}

/**
 * The spec of a sub-agent: the parent's model, fallbacks, workspace and critic
 * unless the call names others, only tools the parent itself may use, limits
 * no larger than what the parent has left, and the parent's sandbox and
 * approval gates.
 */
export function subAgentSpec(
  parent: RunSpec,
  args: ToolArgs<'delegate'>,
  left: Headroom,
  opts: { keepApprovals: boolean } = { keepApprovals: true },
): RunSpecInput {
  return {
    goal: args.goal,
    model: args.model ?? parent.model,
    fallbackModels: parent.fallbackModels,
    tools: (args.tools ?? parent.tools).filter((t) => parent.tools.includes(t)),
    ...(parent.workspace ? { workspace: parent.workspace } : {}),
    limits: {
      ...parent.limits,
      maxSteps: Math.min(parent.limits.maxSteps, Math.max(1, left.steps)),
      maxRuntime: Math.max(1_000, left.ms),
      ...(left.usd !== undefined ? { budgetUsd: Math.max(0.000001, left.usd) } : {}),
    },
    critic: parent.critic,
    // A sub-agent must not get a looser sandbox than its parent by being delegated to, nor run what its parent must ask for.
    sandbox: parent.sandbox,
    ...(opts.keepApprovals && parent.approvals?.length ? { approvals: parent.approvals } : {}),
  };
}

/** The tool result of a sub-agent that ended: it succeeded only if it completed. */
export function subAgentResult(childId: string, result: RunResult): ToolResult {
  const success = result.status === 'completed';
  return {
    success,
    ...(success ? {} : { error: `sub-agent ended ${result.status}: ${result.cause ?? ''}` }),
    output: `sub-agent ${childId} ${result.status} after ${result.steps} steps${result.summary ? `: ${result.summary}` : ''}`,
  };
}

/** The tool result of a sub-agent that ended with no result of its own: terminated, timed out, or refused by the server. */
export function lostSubAgentResult(childId: string, why: string): ToolResult {
  const reason = why.length > 500 ? `${why.slice(0, 500)}…` : why;
  return {
    success: false,
    error: `sub-agent ended without a result: ${reason}`,
    output: `sub-agent ${childId} ended without a result (${reason}); whatever it did so far is in the workspace`,
  };
}

/** The tool result of a sub-agent this run stopped waiting for because the run itself ended (its deadline, a failure): the sub-agent ends with it. */
export function abandonedSubAgentResult(childId: string, runState: string): ToolResult {
  return {
    success: false,
    error: `the run ended (${runState}) while its sub-agent ran`,
    output: `sub-agent ${childId} was still running when this run ended (${runState}); it ends with this run, and whatever it did so far is in the workspace`,
  };
}

/** The tool result of a sub-agent that tripped its emergency stop: it stays stopped for an operator. */
export function stoppedSubAgentResult(report: ChildEmergency): ToolResult {
  return {
    success: false,
    error: 'emergency_stop',
    output: `sub-agent ${report.childId} is emergency-stopped (${report.reason}). It stays stopped, and ends when this run ends, unless an operator clears it before then; its work so far is in the workspace`,
  };
}

/** How a run signs the control messages it sends its sub-agents, so that each can tell its parent's from an operator's. */
export function parentSender(parentId: string): string {
  return `parent ${parentId}`;
}
