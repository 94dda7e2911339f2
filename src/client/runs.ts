import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import {
  Client,
  Connection,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import { controlUpdates, statusQuery, transcriptQuery, type ControlName } from '../api/messages.js';
import { parseRunSpec, type RunSpec } from '../api/spec.js';
import { emptyUsage, type RunResult, type RunStatus, type TranscriptMessage } from '../api/types.js';
import { TetherModelKey, TetherStateKey } from '../server/search-attributes.js';
import { fleetState } from './fleet.js';
import { temporalSettings } from '../worker.js';
import { dataConverterFromEnv } from '../ops/codec.js';
import { tracingFromEnv } from '../ops/tracing.js';
import type { agentRun } from '../workflows/agent-run.js';

/** An operator-facing failure: the message says what went wrong and what to do. */
export class TetherError extends Error {
  constructor(
    message: string,
    readonly code: 'not_found' | 'invalid' | 'rejected' | 'unreachable' | 'conflict',
  ) {
    super(message);
    this.name = 'TetherError';
  }
}

export interface TetherClient {
  client: Client;
  connection: Connection;
  namespace: string;
  taskQueue: string;
  close(): Promise<void>;
}

/** Connects to Temporal, turning "nothing is listening" into advice. */
export async function connectTether(opts: { address?: string; namespace?: string; taskQueue?: string; env?: NodeJS.ProcessEnv } = {}): Promise<TetherClient> {
  const settings = temporalSettings(opts.env);
  const address = opts.address ?? settings.address;
  const namespace = opts.namespace ?? settings.namespace;
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: 5_000 });
  } catch (err) {
    throw new TetherError(
      `cannot reach the Temporal server at ${address} (${(err as Error).message}). Start one with \`tether server\` (or \`tether dev\`), or set TEMPORAL_ADDRESS.`,
      'unreachable',
    );
  }
  // With TETHER_ENCRYPTION_KEY(S) every payload this client sends or reads is sealed and opened here.
  const env = opts.env ?? process.env;
  const tracing = tracingFromEnv('tether-client', env);
  const client = new Client({ connection, namespace, dataConverter: dataConverterFromEnv(env), ...(tracing ? { plugins: [tracing.plugin] } : {}) });
  const close = async () => {
    await connection.close();
    await tracing?.flush();
  };
  return { client, connection, namespace, taskQueue: opts.taskQueue ?? settings.taskQueue, close };
}

export function newRunId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
  return `run-${stamp}-${randomBytes(3).toString('hex')}`;
}

/**
 * Validates a RunSpec and starts its run. A bad spec throws before anything
 * reaches Temporal. A relative workspace is made absolute here, where the
 * caller's working directory means something.
 */
export async function startRun(tc: TetherClient, input: unknown, opts: { id?: string; taskQueue?: string } = {}): Promise<{ runId: string; spec: RunSpec; handle: WorkflowHandle<typeof agentRun> }> {
  let spec: RunSpec;
  try {
    spec = parseRunSpec(input);
  } catch (err) {
    throw new TetherError((err as Error).message, 'invalid');
  }
  if (spec.workspace) spec = { ...spec, workspace: path.resolve(spec.workspace) };
  const runId = opts.id ?? newRunId();
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/.test(runId)) {
    throw new TetherError(`invalid run id "${runId}": use letters, digits, and . _ : - (at most 200 characters)`, 'invalid');
  }
  const fleet = await fleetState(tc);
  try {
    const handle = await tc.client.workflow.start<typeof agentRun>('agentRun', {
      taskQueue: opts.taskQueue ?? tc.taskQueue,
      workflowId: runId,
      args: fleet.active ? [spec, { fleetStop: fleet.reason ?? 'fleet emergency stop' }] : [spec],
      typedSearchAttributes: [
        { key: TetherStateKey, value: 'running' },
        { key: TetherModelKey, value: spec.model },
      ],
    });
    return { runId, spec, handle };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw new TetherError(`a run with id "${runId}" already exists`, 'conflict');
    throw err;
  }
}

/** Sends a control message as an Update, returning the new status or the validator's message. */
export async function controlRun(tc: TetherClient, runId: string, name: ControlName, payload: unknown): Promise<RunStatus> {
  const handle = tc.client.workflow.getHandle(runId);
  try {
    return await deliverUpdate((updateId) => handle.executeUpdate(controlUpdates[name] as typeof controlUpdates.steer, { args: [payload as never], updateId }));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      // Temporal answers "not found" for an Update to a run that exists but has closed.
      const closed = await handle.describe().catch(() => null);
      if (closed) throw new TetherError(`${name}: run ${runId} has already ended (${closed.status.name.toLowerCase()})`, 'rejected');
    }
    throw toTetherError(err, runId);
  }
}

const UPDATE_DELIVERY_ATTEMPTS = 6;

/**
 * Sends an Update, again if the server dropped it undelivered. One id for
 * every attempt, so the workflow applies it at most once.
 */
export async function deliverUpdate<R>(send: (updateId: string) => Promise<R>): Promise<R> {
  const updateId = randomUUID();
  for (let attempt = 1; ; attempt++) {
    try {
      return await send(updateId);
    } catch (err) {
      if (!updateNotDelivered(err) || attempt >= UPDATE_DELIVERY_ATTEMPTS) throw err;
      await sleep(50 * 2 ** attempt);
    }
  }
}

/**
 * The workflow task that carried the Update failed before accepting it (most
 * often UnhandledCommand: the run was ending while an activity completed), so
 * the server dropped the Update without applying it; sending it again is safe.
 */
function updateNotDelivered(err: unknown): boolean {
  const grpc = err instanceof ServiceError ? (err.cause as { code?: number; details?: string } | undefined) : undefined;
  return grpc?.code === 9 && /workflow task failure|not ready/i.test(grpc.details ?? '');
}

/** The run's live status, or (for a run that has ended) the status rebuilt from its result. */
export async function getStatus(tc: TetherClient, runId: string): Promise<RunStatus> {
  const handle = tc.client.workflow.getHandle(runId);
  try {
    return await handle.query(statusQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw toTetherError(err, runId);
    throw err;
  }
}

export async function getTranscript(tc: TetherClient, runId: string): Promise<TranscriptMessage[]> {
  try {
    return await tc.client.workflow.getHandle(runId).query(transcriptQuery);
  } catch (err) {
    throw toTetherError(err, runId);
  }
}

/** Waits for the run to end and returns its RunResult, whatever the ending. */
export async function waitForResult(tc: TetherClient, runId: string): Promise<RunResult> {
  const handle = tc.client.workflow.getHandle<typeof agentRun>(runId);
  try {
    return await handle.result();
  } catch (err) {
    return resultFromFailure(err, runId);
  }
}

/** Reads the RunResult a failed run carries in its failure details. */
export function resultFromFailure(err: unknown, runId: string): RunResult {
  if (!(err instanceof WorkflowFailedError)) throw toTetherError(err, runId);
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.details?.[0]) return cause.details[0] as RunResult;
  const base = { runId, steps: 0, costUsd: 0, usage: emptyUsage() };
  if (cause instanceof CancelledFailure) return { ...base, status: 'cancelled', cause: 'cancelled through Temporal' };
  if (cause instanceof TerminatedFailure) return { ...base, status: 'killed', cause: `terminated: ${cause.message}` };
  if (cause instanceof TimeoutFailure) return { ...base, status: 'timeout', cause: `workflow execution timed out` };
  return { ...base, status: 'failed', cause: cause?.message ?? err.message };
}

export function toTetherError(err: unknown, runId: string): Error {
  if (err instanceof TetherError) return err;
  if (err instanceof WorkflowNotFoundError) return new TetherError(`no run with id "${runId}"; \`tether list\` shows the runs`, 'not_found');
  if (err instanceof WorkflowUpdateFailedError) {
    const message = err.cause?.message ?? err.message;
    return new TetherError(message, 'rejected');
  }
  const message = (err as Error)?.message ?? String(err);
  if (/workflow execution already completed|already completed/i.test(message)) {
    return new TetherError(`run ${runId} has already ended`, 'rejected');
  }
  if (/not found/i.test(message)) return new TetherError(`no run with id "${runId}"`, 'not_found');
  return err as Error;
}
