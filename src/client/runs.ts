import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Client,
  type Connection,
  ServiceError,
  type SignalDefinition,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { ApplicationFailure, CancelledFailure, type SearchAttributePair, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import type { ControlName } from '../api/control.js';
import { FLEET_MEMO, FLEET_NOT_STOPPED, FLEET_WORKFLOW_ID, fleetStateQuery, type FleetState } from '../api/fleet.js';
import { controlSignals, statusQuery, transcriptQuery } from '../api/messages.js';
import { GOAL_MEMO, MEMO_GOAL_CHARS } from '../api/memo.js';
import { STICKY_QUEUE_TIMEOUT_MS, temporalSettings } from '../api/settings.js';
import type { RunSpec } from '../api/spec.js';
import { emptyUsage, type RunResult, type RunStatus, type TranscriptMessage } from '../api/types.js';
import {
  TetherConsecutiveErrorsKey,
  TetherCostUsdKey,
  TetherEmergencyStopKey,
  TetherModelKey,
  TetherStateKey,
  TetherStepsKey,
} from '../api/search-attributes.js';
import { dataConverterFromEnv } from '../ops/codec.js';
import { connectOrExplain } from './connect-or-explain.js';
import { otlpTracesUrl } from '../ops/otlp-url.js';
import { namespaceMissing, RunEndedError, serverGone, serverSilent, TetherError } from './errors.js';
import { listedState } from './list-query.js';
import { withCurrentDeadline } from './paused-deadline.js';
import { checkControlSecrets, checkRunStart } from './run-start-check.js';
import { registerSearchAttributes } from '../server/search-attributes.js';
import { noWorkerFor, noWorkerToReplay, runWorkerPresence, unansweredFor, type WorkerPresence, workerPresence } from './worker-presence.js';
import type { AgentRunCarry, agentRun } from '../workflows/agent-run.js';

export { TetherError } from './errors.js';

export interface TetherClient {
  client: Client;
  connection: Connection;
  namespace: string;
  taskQueue: string;
  close(): Promise<void>;
}

/** Connects to Temporal, turning "nothing is listening" into advice. */
export async function connectTether(opts: { address?: string; namespace?: string; taskQueue?: string; env?: NodeJS.ProcessEnv } = {}): Promise<TetherClient> {
  const settings = temporalSettings(opts.env ?? process.env);
  const address = opts.address ?? settings.address;
  const namespace = opts.namespace ?? settings.namespace;
  const connection = await connectOrExplain(address);
  // With TETHER_ENCRYPTION_KEY(S) every payload this client sends or reads is sealed and opened here.
  const env = opts.env ?? process.env;
  // OpenTelemetry is loaded only when traces go somewhere: it would cost every CLI call a tenth of a second.
  const tracing = otlpTracesUrl(env) ? (await import('../ops/tracing.js')).tracingFromEnv('tether-client', env) : null;
  const client = new Client({ connection, namespace, dataConverter: dataConverterFromEnv(env), ...(tracing ? { plugins: [tracing.plugin] } : {}) });
  const close = async () => {
    await connection.close();
    await tracing?.flush();
  };
  return { client, connection, namespace, taskQueue: opts.taskQueue ?? settings.taskQueue, close };
}

/** A new run's search attributes, set by its start: the run need not upsert them again (src/workflows/visibility.ts). */
function startSearchAttributes(model: string): SearchAttributePair[] {
  return [
    { key: TetherStateKey, value: 'running' },
    { key: TetherModelKey, value: model },
    { key: TetherEmergencyStopKey, value: false },
    { key: TetherConsecutiveErrorsKey, value: 0 },
    { key: TetherCostUsdKey, value: 0 },
    { key: TetherStepsKey, value: 0 },
  ];
}

/**
 * Checks a RunSpec (checkRunStart: nothing bad reaches Temporal) and starts
 * its run. `fleetStop` is the reason of the fleet's emergency stop when the
 * run starts stopped, so the caller can say so.
 */
export async function startRun(
  tc: TetherClient,
  input: unknown,
  opts: { id?: string; taskQueue?: string; carry?: AgentRunCarry; searchAttributes?: SearchAttributePair[]; env?: NodeJS.ProcessEnv } = {},
): Promise<{ runId: string; spec: RunSpec; handle: WorkflowHandle<typeof agentRun>; fleetStop: string | null }> {
  const { spec, runId } = await checkRunStart(input, opts);
  try {
    const fleet = await fleetState(tc);
    const fleetStop = fleet.active ? (fleet.reason ?? 'fleet emergency stop') : null;
    const start = () =>
      tc.client.workflow.start<typeof agentRun>('agentRun', {
        taskQueue: opts.taskQueue ?? tc.taskQueue,
        workflowId: runId,
        args: fleetStop || opts.carry ? [spec, { ...opts.carry, ...(fleetStop ? { fleetStop } : {}) }] : [spec],
        memo: { [GOAL_MEMO]: spec.goal.slice(0, MEMO_GOAL_CHARS) },
        typedSearchAttributes: [...startSearchAttributes(spec.model), ...(opts.searchAttributes ?? [])],
        // A run's id names its workspace, checkpoints and history: a second run under an ended run's id would mix them with its own.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    const handle = await start().catch(async (err: unknown) => {
      if (!(await registeredMissingSearchAttributes(tc, err))) throw err;
      return start();
    });
    return { runId, spec, handle, fleetStop };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      throw new TetherError(`a run with id "${runId}" already exists${await endedAs(tc, runId)}; pick another id`, 'conflict');
    throw toTetherError(err, runId);
  }
}

/**
 * A start refused for want of a search attribute (a server Tether did not
 * start, whose namespace nobody set up) registers what the namespace lacks, so
 * the start can be tried again. False when the refusal was another, or when
 * registering failed (a caller without the right): that failure is then the
 * refusal, with `tether doctor` as the way out.
 */
async function registeredMissingSearchAttributes(tc: TetherClient, err: unknown): Promise<boolean> {
  const attribute = missingSearchAttribute(err);
  if (!attribute) return false;
  const added = await registerSearchAttributes(tc.connection.operatorService, tc.namespace).catch((cause: unknown) => {
    throw new TetherError(
      `this namespace lacks Tether's search attribute ${attribute} (a server Tether did not start), and registering it failed (${(cause as Error).message}): \`tether doctor\` says how to register them`,
      'invalid',
    );
  });
  return added.length > 0;
}

/**
 * The fleet's emergency-stop flag, read before every start (a run started while
 * the fleet is stopped starts stopped). It is read from the fleet workflow's
 * memo, which needs no worker: a run started while none runs waits for one,
 * as any Temporal workflow does, rather than failing here. A fleet never
 * stopped has no workflow yet and is not stopped; one from before the memo is
 * asked.
 */
export async function fleetState(tc: TetherClient): Promise<FleetState> {
  const handle = tc.client.workflow.getHandle(FLEET_WORKFLOW_ID);
  const description = await handle.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  });
  if (description?.status.name !== 'RUNNING') return FLEET_NOT_STOPPED;
  const { fleetStateSchema } = await import('../api/message-schemas.js');
  const published = fleetStateSchema.safeParse(description.memo?.[FLEET_MEMO]);
  if (published.success) return published.data;
  try {
    return await handle.query(fleetStateQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || /not found|completed/i.test((err as Error).message)) return FLEET_NOT_STOPPED;
    throw err;
  }
}

/**
 * How long a control message waits for the run's answer. A worker applies
 * one in milliseconds; this long without an answer means none took the run's
 * workflow task (it died within the last minute, or is swamped).
 */
const CONTROL_ANSWER_MS = 45_000;

/**
 * Sends a control message as an Update, returning the new status or the
 * validator's message. The payload is whatever the operator wrote: the run's
 * validator is the one judge of it, so it goes out unchecked by type. An
 * Update waits for a worker to apply it, so one goes only to a run that a
 * worker polls for; otherwise the error says so and nothing is sent.
 * `presenceOf` reads who polls a queue: a caller sending to many runs reads
 * each queue once.
 */
export async function controlRun(
  tc: TetherClient,
  runId: string,
  name: ControlName,
  payload: unknown,
  presenceOf: (taskQueue: string) => Promise<WorkerPresence> = (taskQueue) => workerPresence(tc, taskQueue),
): Promise<RunStatus> {
  checkControlSecrets(name, payload);
  const handle = tc.client.workflow.getHandle(runId);
  const description = await handle.describe().catch((err: unknown) => {
    throw toTetherError(err, runId);
  });
  if (description.status.name !== 'RUNNING') throw alreadyEnded(name, runId, description);
  const presence = await runWorkerPresence(tc, description, await presenceOf(description.taskQueue));
  if (!presence.live) throw noWorkerFor(runId, name, presence, 'apply');
  const updateId = randomUUID();
  try {
    return await tc.connection.withDeadline(Date.now() + CONTROL_ANSWER_MS, () =>
      deliverUpdate((id) => handle.executeUpdate<RunStatus, [unknown]>(name, { args: [payload], updateId: id }), updateId),
    );
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      // Temporal answers "not found" for an Update to a run that exists but has closed: one sent again after it
      // applied (its first answer was lost) finds the run ended by it, a kill most often; the history keeps its answer.
      const closed = await handle.describe().catch(() => null);
      const answer = closed && (await answerInHistory(tc, runId, updateId));
      if (answer) return answer;
      if (closed) throw alreadyEnded(name, runId, closed);
    }
    if (updateNotDelivered(err) && MUST_LAND.has(name)) throw await sentAsSignal(handle, runId, name, payload);
    if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || isDeadline(err)) {
      // An Update the server took from us but no worker took from it is held by the server, not written to the run's history.
      const held = `The server holds the ${name} message until a worker takes the run's task, and then it applies (\`tether status ${runId}\` shows whether it did). `;
      throw unansweredFor(runId, name, CONTROL_ANSWER_MS, await workerPresence(tc, description.taskQueue), held);
    }
    throw toTetherError(err, runId);
  }
}

/** The control messages that must reach a run even when it cannot answer: they stop it. */
const MUST_LAND: ReadonlySet<ControlName> = new Set(['kill', 'emergencyStop']);

/**
 * A kill or a stop whose Update the run's failing workflow task kept turning
 * back: sent as a Signal, which the server keeps and writes into the run's
 * history as the failing task's attempt ends, and the run applies in the
 * first task that succeeds. What is thrown
 * says so (the run has not stopped yet), or why the Signal failed too.
 */
async function sentAsSignal(handle: WorkflowHandle, runId: string, name: ControlName, payload: unknown): Promise<Error> {
  try {
    await handle.signal(controlSignals[name] as SignalDefinition<[unknown]>, payload);
  } catch (err) {
    return toTetherError(err, runId);
  }
  return new TetherError(
    `${name}: run ${runId} could not answer for ${UPDATE_DELIVERY_MS / 1000} s (its workflow task keeps failing), so the ${name} was sent as a Signal: ` +
      `Temporal has it and writes it into the run's history as the failing task's attempt ends, and the run applies it in the first workflow task that succeeds (\`tether status ${runId}\` shows when). ` +
      `If no task ever succeeds, \`temporal workflow terminate --workflow-id ${runId}\` ends the run`,
    'unreachable',
  );
}

/** What a run answered the Update `updateId` with, as its history keeps it; null when the run never applied it. */
async function answerInHistory(tc: TetherClient, runId: string, updateId: string): Promise<RunStatus | null> {
  const history = await tc.client.workflow
    .getHandle(runId)
    .fetchHistory()
    .catch(() => null);
  const completed = history?.events?.find((e) => e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId === updateId);
  const answer = completed?.workflowExecutionUpdateCompletedEventAttributes?.outcome?.success?.payloads;
  if (!answer) return null;
  const [status] = await decodeArrayFromPayloads(tc.client.options.loadedDataConverter, answer);
  return status as RunStatus;
}

const alreadyEnded = (name: string, runId: string, description: WorkflowExecutionDescription) =>
  new RunEndedError(`${name}: run ${runId} has already ended (${endedState(description)})`);

/** The state a closed run ended in, as lists show it: its own, or how Temporal closed it (a terminated run was killed). */
function endedState(description: WorkflowExecutionDescription): string {
  return listedState(description.typedSearchAttributes.get(TetherStateKey), description.status.name);
}

/** ` (it ended <state>)` for a run id taken by a run that has ended; empty while it runs (or if it cannot be read). */
async function endedAs(tc: TetherClient, runId: string): Promise<string> {
  const description = await tc.client.workflow
    .getHandle(runId)
    .describe()
    .catch(() => null);
  return description && description.status.name !== 'RUNNING' ? ` (it ended ${endedState(description)})` : '';
}

/** A call cut off by its deadline, or a query the server gave up on because no worker took it. */
function isDeadline(err: unknown): boolean {
  const grpc = grpcStatus(err);
  return grpc?.code === 4 || /query timed out/i.test(grpc?.details ?? '');
}

/** The server giving up on a query at once because no worker has polled the run's queue lately (one just stopped): unanswered too. */
function noPollerSeen(err: unknown): boolean {
  return /no poller seen/i.test(`${grpcStatus(err)?.details ?? ''} ${(err as Error)?.message ?? ''}`);
}

/** The gRPC status of a failed call: the SDK wraps a handle's calls in a ServiceError; raw service calls reject with gRPC's own error. */
function grpcStatus(err: unknown): { code?: number; details?: string } | null | undefined {
  return (err instanceof ServiceError ? err.cause : err) as { code?: number; details?: string } | null | undefined;
}

/** A call that needs no worker and failed: past its deadline the server is as good as gone. */
function serverCallError(err: unknown, runId: string): Error {
  return isDeadline(err) ? serverSilent(SERVER_ANSWER_MS) : toTetherError(err, runId);
}

/**
 * How long an undelivered Update is sent again. A workflow task that runs a
 * local file tool can be turned back several times in a row while an Update
 * waits, each retry running the tool again (seconds on a loaded machine); a
 * raw client's oversized Update fails the tasks that hold it for ~20 s before
 * the server drops it. Within the 45 s a control message is given.
 */
const UPDATE_DELIVERY_MS = 40_000;

/**
 * Sends an Update, again if the server dropped it undelivered. One id for
 * every attempt, so the workflow applies it at most once.
 */
export async function deliverUpdate<R>(send: (updateId: string) => Promise<R>, updateId = randomUUID()): Promise<R> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await send(updateId);
    } catch (err) {
      if (!updateNotDelivered(err) || Date.now() - started >= UPDATE_DELIVERY_MS) throw err;
      await sleep(Math.min(1_000, 50 * 2 ** attempt));
    }
  }
}

/**
 * The workflow task that carried the Update failed before accepting it (most
 * often UnhandledCommand: the run was ending while an activity completed; or
 * its worker stopped mid-task), so the server dropped the Update without
 * applying it; sending it again is safe.
 */
function updateNotDelivered(err: unknown): boolean {
  const grpc = grpcStatus(err);
  return grpc?.code === 9 && /workflow task failure|workflow task in failed state|not ready/i.test(grpc.details ?? '');
}

/** The run's last workflow task failed, and Temporal answers no query until one succeeds. */
function taskFailing(err: unknown): boolean {
  const grpc = grpcStatus(err);
  return grpc?.code === 9 && /workflow task in failed state/i.test(grpc.details ?? '');
}

function taskFailingError(runId: string, what: string): TetherError {
  return new TetherError(
    `${what}: run ${runId} cannot answer: its workers fail its workflow task, and Temporal retries it until one succeeds. ` +
      "The workers' log says why (a run started with an encryption key they lack names the key's id; `tether doctor` checks the keys); " +
      `\`temporal workflow show --workflow-id ${runId}\` shows the failed tasks. The run goes on once a worker can run it`,
    'unreachable',
  );
}

/**
 * How long a query waits for a worker's answer. A worker answers in
 * milliseconds, or a few seconds when it is swamped; with none, Temporal
 * itself would wait half a minute and give no reason. A query sent just after
 * the run's worker died waits out the sticky queue's timeout before the server
 * asks another worker, so the wait is longer than that.
 */
const QUERY_ANSWER_MS = STICKY_QUEUE_TIMEOUT_MS + 5_000;

/** How long a live server takes at most to answer a call no worker takes part in (a describe, a cancel request): it reads or writes its database. */
const SERVER_ANSWER_MS = 5_000;

/** The run's live status, or (for a run that has ended) the status a worker rebuilds from its history. */
export async function getStatus(tc: TetherClient, runId: string, answerMs = QUERY_ANSWER_MS): Promise<RunStatus> {
  const status = await answeredQuery(tc, runId, 'status', answerMs, () => tc.client.workflow.getHandle(runId).query(statusQuery));
  return withCurrentDeadline(status, Date.now());
}

export function getTranscript(tc: TetherClient, runId: string, answerMs = QUERY_ANSWER_MS): Promise<TranscriptMessage[]> {
  return answeredQuery(tc, runId, 'transcript', answerMs, () => tc.client.workflow.getHandle(runId).query(transcriptQuery));
}

/** A query with a deadline; one no worker answered in time fails saying who could have, and what to do. */
export async function answeredQuery<T>(tc: TetherClient, runId: string, what: string, answerMs: number, query: () => Promise<T>): Promise<T> {
  try {
    return await tc.connection.withDeadline(Date.now() + answerMs, query);
  } catch (err) {
    if (taskFailing(err)) throw taskFailingError(runId, what);
    // A query cut off on the way (CANCELLED: its worker stopped while it held it) went as unanswered as one past its deadline.
    if (!isDeadline(err) && !noPollerSeen(err) && grpcStatus(err)?.code !== 1) throw toTetherError(err, runId);
    // The query may have waited on a server that went away; a describe needs no worker, so its silence says the server is gone.
    const description = await describeRun(tc, runId);
    // A task retried is a task that failed: no worker will answer until one runs it.
    if ((description.raw.pendingWorkflowTask?.attempt ?? 0) > 1) throw taskFailingError(runId, what);
    const presence = await workerPresence(tc, description.taskQueue);
    if (description.status.name !== 'RUNNING') throw noWorkerToReplay(runId, what, presence);
    throw unansweredFor(runId, what, answerMs, presence);
  }
}

/**
 * Temporal's description of a run, within a few seconds: a server that does
 * not answer in time is gone (a ServerGoneError), rather than a call that
 * waits out the client's own retries.
 */
export async function describeRun(tc: TetherClient, runId: string): Promise<WorkflowExecutionDescription> {
  try {
    return await tc.connection.withDeadline(Date.now() + SERVER_ANSWER_MS, () => tc.client.workflow.getHandle(runId).describe());
  } catch (err) {
    throw serverCallError(err, runId);
  }
}

/**
 * Asks Temporal to cancel the run, saying who and why; the run ends
 * `cancelled`, and `cancelledResult` reads the reason back from its history.
 */
export async function cancelRun(tc: TetherClient, runId: string, reason: string): Promise<void> {
  try {
    await tc.connection.withDeadline(Date.now() + SERVER_ANSWER_MS, () =>
      tc.client.workflowService.requestCancelWorkflowExecution({
        namespace: tc.namespace,
        workflowExecution: { workflowId: runId },
        identity: tc.client.options.identity,
        requestId: randomUUID(),
        reason,
      }),
    );
  } catch (err) {
    throw serverCallError(err, runId);
  }
}

/** Why the run was cancelled: the reason its cancel request gave ("cancelled by SIGINT in tether run"), or null when it gave none. */
export async function cancellationCause(tc: TetherClient, runId: string): Promise<string | null> {
  const history = await tc.client.workflow
    .getHandle(runId)
    .fetchHistory()
    .catch(() => null);
  const request = history?.events?.find((e) => e.workflowExecutionCancelRequestedEventAttributes)?.workflowExecutionCancelRequestedEventAttributes;
  if (!request) return null;
  return request.cause ? `cancelled by ${request.cause}` : request.identity ? `cancelled by ${request.identity}` : null;
}

const ENCODED_FAILURE = 'Encoded failure';

/** What of an answer is encrypted with a key this client lacks: its failure (the SDK's stand-in for it), or its payload; null if neither. */
function sealedAnswer(err: unknown): string | null {
  const messages = [(err as Error)?.message, (err as { cause?: Error })?.cause?.message];
  if (messages.includes(ENCODED_FAILURE)) return 'a failure';
  return messages.some((m) => m?.startsWith('Unknown encoding: binary/encrypted')) ? 'a payload' : null;
}

/** A failure whose words are encrypted with a key this client does not hold: what it is, and the way out. */
function sealedFailure(runId: string, what: string): TetherError {
  return new TetherError(
    `run ${runId} ${what} this client cannot read: it is encrypted, and no key here opens it. Set TETHER_ENCRYPTION_KEY ` +
      "(or TETHER_ENCRYPTION_KEYS) to the workers' key; a client without it also sends its runs unencrypted, which encrypting workers refuse",
    'invalid',
  );
}

/** Reads the RunResult a failed run carries in its failure details. */
export function resultFromFailure(err: unknown, runId: string): RunResult {
  if (!(err instanceof WorkflowFailedError)) throw toTetherError(err, runId);
  const cause = err.cause;
  // The SDK's stand-in for a failure whose message and details are sealed, read by a client with no key for them.
  if (cause?.message === ENCODED_FAILURE) throw sealedFailure(runId, 'ended with a failure');
  if (cause instanceof ApplicationFailure && cause.details?.[0]) return cause.details[0] as RunResult;
  const base = { runId, steps: 0, costUsd: 0, usage: emptyUsage() };
  if (cause instanceof CancelledFailure) return { ...base, status: 'cancelled', cause: 'cancelled through Temporal' };
  if (cause instanceof TerminatedFailure) return { ...base, status: 'killed', cause: `terminated: ${cause.message}` };
  if (cause instanceof TimeoutFailure) return { ...base, status: 'timeout', cause: `workflow execution timed out` };
  return { ...base, status: 'failed', cause: cause?.message ?? err.message };
}

/** The search attribute a refusal names as unknown to the namespace, or null. */
function missingSearchAttribute(err: unknown): string | null {
  const said = `${(err as Error)?.message ?? ''} ${grpcStatus(err)?.details ?? ''}`;
  return /no mapping defined for search attribute (\w+)/i.exec(said)?.[1] ?? null;
}

/** A namespace that is missing, or that lacks Tether's search attributes: the server's words, and the way out. */
function setUpProblem(err: unknown): TetherError | null {
  const missing = namespaceMissing(err);
  if (missing) return missing;
  const attribute = missingSearchAttribute(err);
  if (attribute)
    return new TetherError(
      `this namespace lacks Tether's search attribute ${attribute} (a server Tether did not start): \`tether doctor\` says how to register them`,
      'invalid',
    );
  return null;
}

export function toTetherError(err: unknown, runId: string): Error {
  if (err instanceof TetherError) return err;
  const sealed = sealedAnswer(err);
  if (sealed) return sealedFailure(runId, `answered with ${sealed}`);
  const gone = serverGone(err);
  if (gone) return gone;
  const setUp = setUpProblem(err);
  if (setUp) return setUp;
  if (err instanceof WorkflowNotFoundError) return new TetherError(`no run with id "${runId}"; \`tether list\` shows the runs`, 'not_found');
  if (err instanceof WorkflowUpdateFailedError) {
    const message = err.cause?.message ?? err.message;
    // The validator's RunEnding (src/run/run-types.ts): the run took its last step, and Temporal does not know it yet.
    if (err.cause instanceof ApplicationFailure && err.cause.type === 'RunEnding') return new RunEndedError(message);
    return new TetherError(message, 'rejected');
  }
  const message = (err as Error)?.message ?? String(err);
  if (/workflow execution already completed|already completed/i.test(message)) {
    return new RunEndedError(`run ${runId} has already ended`);
  }
  if (/not found/i.test(message)) return new TetherError(`no run with id "${runId}"`, 'not_found');
  // The SDK's own words ("Failed to query Workflow") say what it tried; the server's reason is in the gRPC cause.
  const details = err instanceof ServiceError ? (err.cause as { details?: string } | undefined)?.details : undefined;
  if (details && !message.includes(details)) return Object.assign(new Error(`${message}: ${details}`), { cause: err });
  return err as Error;
}
