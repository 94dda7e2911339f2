import { isCancellation, log, patched } from '@temporalio/workflow';
import type { LlmReply } from '../activities/llm.js';
import type { ToolInvocation } from '../api/tools.js';
import type { ToolCall } from '../api/types.js';
import { EMPTY_REPLY_TEXT, type NotAnAnswer, notAnAnswer } from '../run/answer-check.js';
import type { CriticLink } from './critic-link.js';
import type { Delegation } from './delegation.js';
import { patchedOrLean, patchedSinceInterceptorsAlways } from './lean-history.js';
import { askModel } from './model-call.js';
import { waitWhilePaused } from './pauses.js';
import { HALTED_VERIFICATION, type RunRuntime } from './run-runtime.js';
import { inSpan } from './tracing.js';

/** What a step reaches beyond the runtime: the run's critic and its sub-agents. */
export interface RunLinks {
  critic: CriticLink;
  delegation: Delegation;
}

/**
 * One step in a span of its own. A bug or an unexpected value must not crash
 * the run: it is a failed step, counted like any other.
 */
export async function runStep(rt: RunRuntime, links: RunLinks): Promise<void> {
  const { run } = rt;
  try {
    await inSpan(`step ${run.step + 1}`, { 'tether.run_id': rt.runId, 'tether.step': run.step + 1 }, () => takeStep(rt, links));
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.error(`unexpected error in step ${run.step}: ${(err as Error).message}`, { runId: rt.runId });
    const error = `unexpected error: ${(err as Error).message}`;
    if (!run.ended) run.answerOpenCalls(error, Date.now());
    rt.noteTrip(run.recordFailure(error, Date.now()));
  }
}

/** Moves steers in, asks the model, and runs each tool call it made, in order. */
async function takeStep(rt: RunRuntime, links: RunLinks): Promise<void> {
  const { run } = rt;
  run.takeSteers();
  links.critic.report();
  const reply = await askModel(rt);
  links.critic.recordedAt(reply?.completedAtMs);
  if (!reply || run.ended) return;
  // patched(): a run recorded before took a cut-off or empty reply as its answer, and replays so.
  const refused = reply.toolCalls.length === 0 ? notAnAnswer(reply) : null;
  if (refused && patched('no-answer-refused')) return refuseAnswer(rt, reply, refused);
  run.recordModelReply(reply, Date.now());
  rt.metrics.step(reply.model);
  // A reply that reached the budget ceiling paused the run: its calls, paid for, wait for the approval and then run,
  // rather than being refused and asked for again in a new paid call. patched(): runs recorded before refused them.
  if (run.state === 'awaiting_approval' && reply.toolCalls.length && patched('budget-holds-reply-calls')) {
    await waitWhilePaused(rt);
    if (run.ended) return;
  }
  if (reply.toolCalls.length === 0) return finish(rt, reply.text);
  for (const call of reply.toolCalls) {
    if (run.ended) break;
    await handleCall(rt, links, call);
  }
}

/** A reply that cannot end the run: recorded as a step, counted as a failure, and the model told why. */
function refuseAnswer(rt: RunRuntime, reply: LlmReply, refused: NotAnAnswer): void {
  const { run } = rt;
  run.recordModelReply(reply.text.trim() ? reply : { ...reply, text: EMPTY_REPLY_TEXT }, Date.now());
  rt.metrics.step(reply.model);
  run.addUserMessage(refused.notice, 'notice');
  rt.noteTrip(run.recordFailure(refused.failure, Date.now()));
}

async function handleCall(rt: RunRuntime, links: RunLinks, call: ToolCall): Promise<void> {
  const { run } = rt;
  const admission = run.admit(call);
  if (admission.kind === 'not_run') return rt.recordToolResult(call, admission.result, false);
  // patched(): only runs with `approvals` reach it, and histories recorded before gates replay unchanged.
  // patched(): runs recorded before read every approval pattern without Unicode.
  const gated = admission.kind === 'run' && run.needsApproval(call, patchedSinceInterceptorsAlways('approval-match-unicode'));
  if (gated && patchedOrLean('tool-approval')) return decideThenRun(rt, links, call);
  run.noteToolStart(call.name, Date.now());
  links.critic.report();
  if (admission.kind === 'refused') rt.recordToolResult(call, admission.result);
  else links.critic.worked(await execute(rt, links, call, admission.invocation));
  rt.publish();
}

/** Holds a call until a person decides; runs it as decided, or gives the model the denial, and the loop goes on. */
async function decideThenRun(rt: RunRuntime, links: RunLinks, held: ToolCall): Promise<void> {
  const { run } = rt;
  run.holdForApproval(held, Date.now());
  log.info(`tool call ${held.id} (${held.name}) waits for approval`, { runId: rt.runId, callId: held.id, tool: held.name });
  await waitWhilePaused(rt);
  if (run.ended) return;
  const outcome = run.takeToolDecision(held);
  if (outcome.kind === 'denied') return rt.recordToolResult(held, outcome.result, false);
  run.noteToolStart(held.name, Date.now());
  links.critic.report();
  links.critic.worked(await execute(rt, links, outcome.call, outcome.invocation));
  rt.publish();
}

/** Runs a call the run admitted; how long it took when its result says (a workspace tool's), for the critic's reports. */
async function execute(rt: RunRuntime, links: RunLinks, call: ToolCall, invocation: ToolInvocation): Promise<number | undefined> {
  switch (invocation.name) {
    case 'finish':
      await finish(rt, invocation.args.summary, call);
      return undefined;
    case 'ask_user':
      await askUser(rt, call, invocation.args.question);
      return undefined;
    case 'delegate':
      rt.recordToolResult(call, await rt.betweenCheckpoints(call, () => links.delegation.delegate(call, invocation.args)));
      return undefined;
    default: {
      const result = await rt.runTool(call);
      // A non-idempotent tool interrupted by a crash was not run: the model decides, nothing counts.
      if (result) rt.recordToolResult(call, result, !result.interrupted);
      return result?.durationMs;
    }
  }
}

/** The model says the goal is done: through the verification gate when there is one. */
async function finish(rt: RunRuntime, summary: string, call?: ToolCall): Promise<void> {
  const { run } = rt;
  // patched(): only a finish with steers waiting takes the new path; histories from before it replay unchanged.
  if (run.pendingSteers > 0 && patched('steer-before-finish') && run.finishWaitsForSteers(call, Date.now())) return;
  const attempt = run.requestFinish(summary, call, Date.now());
  if (attempt === null) return;
  const verified = await rt.verify(attempt);
  if (!verified) {
    // Halted by an emergency stop: the attempt is given back and the model may finish again after the clear.
    if (!run.ended) run.recordVerificationLost(HALTED_VERIFICATION, call, Date.now());
    return;
  }
  if ('lost' in verified) run.recordVerificationLost(verified.lost, call, Date.now());
  else if ('notRun' in verified) rt.noteTrip(run.recordVerificationNotRun(verified.notRun, call, Date.now()).tripped);
  else run.recordVerification(verified.outcome, attempt, summary, call, Date.now());
}

/** Blocks the run on a person's answer, which becomes the call's result. */
async function askUser(rt: RunRuntime, call: ToolCall, question: string): Promise<void> {
  rt.run.ask(question, Date.now());
  await waitWhilePaused(rt);
  if (rt.run.ended) return;
  rt.run.recordAnswer(call, Date.now());
}
