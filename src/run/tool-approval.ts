import type { ControlPayload } from '../api/control.js';
import type { ApprovalRule } from '../api/spec.js';
import { NOT_RUN, parseToolCall, type ToolInvocation } from '../api/tools.js';
import type { PendingToolCall, ToolCall, ToolResult } from '../api/types.js';
import { withOutputNote } from './prompt.js';

/**
 * Tool approval gates (RunSpec `approvals`): which calls wait for a person,
 * whether a decision applies to the call that waits, and what each decision
 * does to the call. Pure: the workflow only waits for the decision and
 * carries out what `decide` returns.
 */

export type ToolDecision = ControlPayload<'decideTool'>;

/** What a decision does to the call: run it (perhaps with edited arguments), or give the model the denial as its result. */
export type DecisionOutcome = { kind: 'run'; call: ToolCall; invocation: ToolInvocation; edited: boolean } | { kind: 'denied'; result: ToolResult };

/** The arguments as the rules see them: compact JSON, keys in the model's order. */
export function argumentsText(args: unknown): string {
  return JSON.stringify(args ?? {});
}

/**
 * A rule's `match` as the gate reads it: Unicode-aware (`\p{Script=Cyrillic}`, one match per astral
 * character) when it compiles so, as it always did when it compiles only without the `u` flag
 * (identity escapes such as `\-`). Runs recorded before read every pattern without it (`unicode` false).
 */
export function approvalPattern(source: string, unicode: boolean): RegExp {
  if (unicode) {
    try {
      return new RegExp(source, 'u');
    } catch {
      // Compiles only as a plain pattern: taken as one, as the RunSpec's check took it.
    }
  }
  return new RegExp(source);
}

/** Whether any rule names this call's tool and (when it has `match`) matches its arguments. */
export function needsApproval(call: ToolCall, rules: readonly ApprovalRule[], unicode = true): boolean {
  return rules.some((rule) => rule.tool === call.name && (rule.match === undefined || approvalPattern(rule.match, unicode).test(argumentsText(call.args))));
}

/**
 * Why a decision cannot apply now, or null when it can: there must be a call
 * waiting, the decision must name it (a decision for an earlier call is
 * stale), and edited arguments must pass the tool's own schema.
 */
export function decisionProblem(pending: PendingToolCall | null, decision: ToolDecision): string | null {
  if (pending === null) return `no tool call is waiting for approval (callId "${decision.callId}" is stale or unknown)`;
  if (decision.callId !== pending.callId) {
    return `stale callId "${decision.callId}": the call waiting for approval is "${pending.callId}" (${pending.tool})`;
  }
  if (decision.decision !== 'edit') return null;
  const parsed = parseToolCall(pending.tool, decision.args);
  return parsed.ok ? null : `edited args rejected: ${parsed.error}`;
}

/** Applies a decision that passed `decisionProblem` to the call it names. */
export function decide(call: ToolCall, decision: ToolDecision): DecisionOutcome {
  if (decision.decision === 'deny') return { kind: 'denied', result: denial(decision.reason) };
  const args = decision.decision === 'edit' ? decision.args : call.args;
  const parsed = parseToolCall(call.name, args);
  // Approved arguments passed admission and edited ones passed decisionProblem; this is the last line of defence.
  if (!parsed.ok) return { kind: 'denied', result: { success: false, error: `${NOT_RUN.refused}${parsed.error}`, output: '' } };
  return { kind: 'run', call: { ...call, args }, invocation: parsed.invocation, edited: decision.decision === 'edit' };
}

/** The result the model reads for a denied call: a failure that carries the person's reason. */
export function denial(reason: string | undefined): ToolResult {
  const why = reason?.trim() ? reason.trim() : 'no reason given';
  return { success: false, error: `${NOT_RUN.denied} (${why}). It did not run.`, output: '' };
}

/** Tells the model, in the call's own result, that a person changed its arguments before it ran. */
export function withEditNote(result: ToolResult, args: unknown, reason: string | undefined): ToolResult {
  const because = reason?.trim() ? ` (${reason.trim()})` : '';
  const note = `Note: a person edited the arguments of this call before it ran${because}; it ran with ${argumentsText(args)}`;
  return withOutputNote(result, note);
}

/**
 * The run's gate: the call waiting for a person, the decision taken for it,
 * and the notes owed to edited calls until their result is recorded.
 */
export class ApprovalGate {
  private waiting: PendingToolCall | null = null;
  private decided: ToolDecision | null = null;
  private readonly edits = new Map<string, { args: unknown; reason: string | undefined }>();

  constructor(private readonly rules: readonly ApprovalRule[]) {}

  /** The call waiting for a decision, as `status.pendingToolCall` shows it. */
  get pending(): PendingToolCall | null {
    return this.waiting;
  }

  requires(call: ToolCall, unicode: boolean): boolean {
    return needsApproval(call, this.rules, unicode);
  }

  /** Holds `call` until a decision comes. */
  hold(call: ToolCall, nowMs: number): void {
    this.waiting = { callId: call.id, tool: call.name, args: call.args, requestedAt: new Date(nowMs).toISOString() };
    this.decided = null;
  }

  /** Why `decision` cannot apply now, or null. */
  problem(decision: ToolDecision): string | null {
    return decisionProblem(this.waiting, decision);
  }

  /** Records a decision that passed `problem`: the call no longer waits. */
  record(decision: ToolDecision): void {
    this.decided = decision;
    this.waiting = null;
  }

  /** What the decision taken for `call` does; an edited call's result will carry a note. */
  take(call: ToolCall): DecisionOutcome {
    const decision = this.decided;
    this.decided = null;
    if (!decision || decision.callId !== call.id) return { kind: 'denied', result: denial('no decision was recorded for this call') };
    const outcome = decide(call, decision);
    if (outcome.kind === 'run' && outcome.edited) this.edits.set(call.id, { args: outcome.call.args, reason: decision.reason });
    return outcome;
  }

  /** The result as the model reads it: with the edit note when a person edited the call. */
  annotate(callId: string, result: ToolResult): ToolResult {
    const edit = this.edits.get(callId);
    if (!edit) return result;
    this.edits.delete(callId);
    return withEditNote(result, edit.args, edit.reason);
  }
}
