import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { GOAL_MEMO, MEMO_GOAL_CHARS } from '../api/memo.js';
import { describeIssues, runSpecSchema, type RunSpec, type RunSpecInput, specSizeProblem } from '../api/spec.js';
import { KEY_NOT_HELD } from '../api/payload-refusal.js';
import { agentRunCarrySchema, payloadProblem } from '../api/message-schemas.js';
import { describeBytes, jsonBytes, TEMPORAL_PAYLOAD_LIMIT_BYTES } from '../api/payload-limits.js';
import { emptyUsage, type RunResult } from '../api/types.js';
import { TetherStateKey } from '../api/search-attributes.js';
import type { ForkStart } from '../api/fork.js';
import { forkSnapshot } from '../run/fork.js';
import { initialRuntimeMs } from '../run/limits.js';
import { RunState } from '../run/run-state.js';
import type { RunSnapshot } from '../run/run-types.js';
import { registerControlHandlers } from './control.js';
import { CriticLink } from './critic-link.js';
import { Delegation } from './delegation.js';
import { restoreForkWorkspace } from './fork-restore.js';
import { patchedOrLean } from './lean-history.js';
import { enforceDeadline, waitWhilePaused } from './pauses.js';
import { RunRuntime } from './run-runtime.js';
import { type RunLinks, runStep } from './step.js';

/** Room left under Temporal's payload limit for the codec's envelope and the encoding's own overhead. */
const CARRY_LIMIT_BYTES = TEMPORAL_PAYLOAD_LIMIT_BYTES - 64 * 1024;

/** What a run carries into its next execution when it continues as new. */
export interface AgentRunCarry {
  snapshot?: RunSnapshot;
  /** Set when the run starts while the fleet's emergency stop is active: it starts stopped. */
  fleetStop?: string;
  criticStarted?: boolean;
  workspaceQueue?: string | null;
  /** Set when the run is a fork: where it starts (`tether fork`). Only its first execution has it. */
  fork?: ForkStart;
  /** A sub-agent works in its parent's workspace: the parent's run id (its queue comes as `workspaceQueue`). */
  workspaceOf?: string;
}

/**
 * One agent run: ask the model, run the tools it calls, repeat until it
 * finishes (through the verification gate) or a limit, an operator or the
 * safety system ends it. Every decision lands in this workflow's history.
 */
export async function agentRun(input: RunSpecInput, rawCarry: AgentRunCarry = {}): Promise<RunResult> {
  const spec = validateSpec(input);
  const carry = validateCarry(rawCarry);
  const run = restoreRun(spec, carry);
  const rt = new RunRuntime(spec, run, carry.workspaceQueue ?? null, carry.workspaceOf);
  const links: RunLinks = { delegation: new Delegation(rt), critic: new CriticLink(rt, carry.criticStarted ?? false) };
  if (carry.fleetStop && !carry.snapshot) rt.startStopped(carry.fleetStop);
  registerControlHandlers(run, (name, via) => rt.controlApplied(name, via, links.delegation));
  if (!carry.snapshot) rt.metrics.runStarted(spec.model);
  rt.publish();
  // A run started past Tether's client (a plain Temporal client, a sub-agent) has no goal in its memo for lists to show.
  if (!carry.snapshot && workflowInfo().memo?.[GOAL_MEMO] === undefined && patched('goal-memo'))
    upsertMemo({ [GOAL_MEMO]: spec.goal.slice(0, MEMO_GOAL_CHARS) });
  // patched(): runs recorded before workspace binding replay without the claim.
  if (carry.workspaceQueue === undefined && patchedOrLean('workspace-binding')) await rt.bindWorkspace();
  // patched(): forks are new, so no recorded history has the restore; the marker says where it began.
  if (carry.fork?.restore && !carry.snapshot && patchedOrLean('fork-restore')) await restoreForkWorkspace(rt, carry.fork, carry.fork.restore);
  await links.critic.start();

  enforceDeadline(rt).catch((err) => {
    if (!isCancellation(err)) throw err;
  });
  links.critic.reportPauses().catch((err) => {
    if (!isCancellation(err)) throw err;
  });
  try {
    while (!run.ended) {
      await waitWhilePaused(rt);
      if (run.ended || run.endIfOutOfSteps(Date.now())) break;
      await continueAsNewIfLong(rt, links.critic);
      await runStep(rt, links);
      rt.publish();
      rt.publishWarnings();
    }
  } catch (err) {
    if (!isCancellation(err) || run.ended) throw err;
    await endCancelled(rt, links.critic);
    throw err;
  }
  return endRun(rt, links.critic);
}

/** Continues as new once the history is long, carrying the run's whole state, unless the run ended while its handlers finished. */
async function continueAsNewIfLong(rt: RunRuntime, critic: CriticLink): Promise<void> {
  const info = workflowInfo();
  if (!info.continueAsNewSuggested && info.historyLength < rt.spec.limits.maxHistoryEvents) return;
  await condition(allHandlersFinished);
  if (rt.run.ended) return;
  // The transcript travels whole in continue-as-new's input: it must fit a payload whatever the run did.
  if (rt.run.boundTranscript()) log.warn('transcript shortened to fit the continue-as-new payload', { runId: rt.runId });
  const carry: AgentRunCarry = {
    snapshot: rt.run.carryOver(),
    criticStarted: critic.started,
    workspaceQueue: rt.queue,
    ...(rt.workspaceOf !== rt.runId ? { workspaceOf: rt.workspaceOf } : {}),
  };
  // The last line of defence: an input over Temporal's limit would fail this workflow task forever; failing the run is recoverable.
  const bytes = jsonBytes([rt.spec, carry]);
  if (bytes > CARRY_LIMIT_BYTES) {
    rt.run.end(
      { status: 'failed', cause: `the run's state (${describeBytes(bytes)}) is too large to continue as new under Temporal's payload limit` },
      Date.now(),
    );
    return;
  }
  log.info(`continuing as new after ${rt.run.step} steps`, { runId: rt.runId, historyLength: workflowInfo().historyLength });
  await continueAsNew<typeof agentRun>(rt.spec, carry);
}

/** Temporal cancelled the run: it ends `cancelled`, and the execution ends Canceled. */
async function endCancelled(rt: RunRuntime, critic: CriticLink): Promise<void> {
  const { run } = rt;
  run.end({ status: 'cancelled', cause: 'cancelled through Temporal' }, Date.now());
  await CancellationScope.nonCancellable(async () => {
    rt.publish();
    await critic.end();
    rt.publishFinalStatus();
  });
  rt.metrics.runEnded('cancelled', rt.spec.model, run.step, run.costUsd);
}

/** Only `completed` completes the execution; every other ending fails it with the state as type and the RunResult as details. */
async function endRun(rt: RunRuntime, critic: CriticLink): Promise<RunResult> {
  await rt.answerUpdatesBeforeClosing();
  rt.publish();
  rt.publishWarnings();
  await critic.end();
  rt.publishFinalStatus();
  const result = rt.run.result();
  rt.metrics.runEnded(result.status, rt.spec.model, result.steps, result.costUsd);
  const killLatency = rt.killLatencyMs();
  if (result.status === 'killed' && killLatency !== null) rt.metrics.kill(killLatency);
  log.info(`run ended: ${result.status}`, { runId: rt.runId, status: result.status, steps: result.steps, cause: result.cause });
  if (result.status === 'completed') return result;
  throw ApplicationFailure.create({ type: result.status, message: result.cause ?? result.status, details: [result], nonRetryable: true });
}

/** A fork starts from its source's state at the fork's step: a fresh run's state with the inherited transcript and checkpoints. */
function forkedState(spec: RunSpec, fork: ForkStart | undefined): RunSnapshot | undefined {
  if (!fork) return undefined;
  const fresh = new RunState(workflowInfo().workflowId, spec, Date.now(), Date.now() + initialRuntimeMs(spec));
  return forkSnapshot(fresh.snapshot(), fork);
}

function validateSpec(input: RunSpecInput): RunSpec {
  const parsed = runSpecSchema.safeParse(input);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error);
    // Sealed with a key this worker lacks: a worker short of a key, not a bad spec. The workflow task fails and is
    // tried again, so the run waits for a worker that holds the key instead of failing on the first one without.
    if (issues.includes(KEY_NOT_HELD)) throw new Error(`this worker cannot open the RunSpec: ${issues}`);
    refuseSpec(`invalid RunSpec: ${issues}`);
  }
  // A spec started past the client (a raw Temporal start) must not grow the run's payloads past Temporal's limit.
  const tooBig = specSizeProblem(parsed.data);
  if (tooBig && patchedOrLean('spec-size-limit')) refuseSpec(`invalid RunSpec: ${tooBig}`);
  // A relative workspace would be whatever the worker's working directory holds; Tether's clients make it absolute where it means something.
  const { workspace } = parsed.data;
  if (workspace !== undefined && !workspace.startsWith('/') && patched('relative-workspace-refused'))
    refuseSpec(`invalid RunSpec: workspace "${workspace.slice(0, 80)}" must be an absolute path on the worker`);
  return parsed.data;
}

/**
 * A spec that got past the client (a raw Temporal start) ends the run `failed`, as every other failure does: the
 * state as the failure's type, the RunResult as its details, `TetherState` in visibility. patched(): runs
 * recorded before failed with the type `InvalidRunSpec` and nothing else.
 */
function refuseSpec(cause: string): never {
  if (!patched('invalid-spec-ends-failed')) throw ApplicationFailure.create({ type: 'InvalidRunSpec', message: cause, nonRetryable: true });
  upsertSearchAttributes([{ key: TetherStateKey, value: 'failed' }]);
  const result: RunResult = { runId: workflowInfo().workflowId, status: 'failed', steps: 0, costUsd: 0, usage: emptyUsage(), cause };
  throw ApplicationFailure.create({ type: 'failed', message: cause, details: [result], nonRetryable: true });
}

/** The second input is Tether's own (continue-as-new, sub-agents); a raw start with a malformed one fails the run, not its workflow task. */
function validateCarry(raw: unknown): AgentRunCarry {
  const parsed = agentRunCarrySchema.safeParse(raw ?? {});
  if (!parsed.success)
    throw ApplicationFailure.create({ type: 'InvalidRunCarry', message: `invalid run carry: ${payloadProblem(parsed.error)}`, nonRetryable: true });
  return parsed.data as AgentRunCarry;
}

function restoreRun(spec: RunSpec, carry: AgentRunCarry): RunState {
  try {
    return new RunState(workflowInfo().workflowId, spec, Date.now(), Date.now() + initialRuntimeMs(spec), carry.snapshot ?? forkedState(spec, carry.fork));
  } catch (err) {
    throw ApplicationFailure.create({
      type: 'InvalidRunCarry',
      message: `cannot restore the run's carried state: ${(err as Error).message}`,
      nonRetryable: true,
    });
  }
}
