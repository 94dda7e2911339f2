import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, type Connection, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { connectTemporal } from '../src/server/temporal-connection.js';
import { ApplicationFailure, type Payload } from '@temporalio/common';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { controlSignals, controlUpdates } from '../src/api/messages.js';
import { controlRun, getStatus, getTranscript, startRun, type TetherClient } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { dataConverterFromEnv, ENCRYPTED_ENCODING, FAILURE_CONVERTER_PATH, KEY_ID_METADATA } from '../src/ops/codec.js';
import { listRuns } from '../src/client/list.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { createTetherWorker } from '../src/worker.js';
import { runCli } from './helpers/cli-process.js';
import { eventually } from './helpers/eventually.js';
import { workflowBundle } from './helpers/harness.js';

const GOAL = 'GOAL-MARKER-7d1f: list the launch codes';
const THOUGHT = 'TRANSCRIPT-MARKER-2b9e';
const TOOL_OUTPUT = 'TOOL-OUTPUT-MARKER-42';
const SUMMARY = 'SUMMARY-MARKER-c0de';
const MARKERS = ['GOAL-MARKER-7d1f', THOUGHT, TOOL_OUTPUT, SUMMARY];

const scripts: Record<string, Script> = {
  secretive: {
    steps: [
      // The command computes the marker, so it appears only in the tool's output.
      { reply: { text: THOUGHT, toolCalls: [{ name: 'shell', args: { command: 'echo TOOL-OUTPUT-MARKER-$((6*7))' } }] } },
      { reply: { toolCalls: [{ name: 'finish', args: { summary: SUMMARY } }] } },
    ],
  },
  asker: {
    steps: [
      { reply: { toolCalls: [{ name: 'ask_user', args: { question: 'may I go on?' } }] } },
      { reply: { toolCalls: [{ name: 'finish', args: { summary: 'went on' } }] } },
    ],
  },
};

/**
 * A history as stored, with every bytes field (base64 in the history's JSON)
 * also shown as UTF-8, so clear text anywhere in it would be visible.
 */
function rawText(history: unknown): string {
  return JSON.stringify(history, (_key, value) => {
    if (typeof value === 'string' && /^[A-Za-z0-9+/]{4,}={0,2}$/.test(value)) return `${value} ${Buffer.from(value, 'base64').toString('utf8')}`;
    if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
    return value;
  });
}

describe('encrypted payloads', () => {
  const env = { ...process.env, TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
  const address = inject('temporalAddress');
  const taskQueue = `ops-enc-${process.pid}-${Date.now()}`;
  let scripted: ScriptedServer;
  let workspaceRoot: string;
  let connection: Connection;
  let encrypted: TetherClient;
  let plain: Client;
  /** Sends plain JSON, as any Temporal client without the key would, but can read the worker's encrypted answers. */
  let plaintextSender: Client;
  let stopWorker: () => Promise<void>;

  /** A worker that reads its key from `workerEnv`, as `tether worker` does; resolves to its stop. */
  async function startWorker(workerEnv: NodeJS.ProcessEnv, queue: string): Promise<() => Promise<void>> {
    const worker = await createTetherWorker({
      address,
      taskQueue: queue,
      env: workerEnv,
      workflowBundle: await workflowBundle(),
      scriptedUrl: scripted.url,
      workspaceRoot,
      logger: pino({ level: 'silent' }),
      shutdownGraceMs: 2_000,
    });
    const running = worker.worker.run();
    return async () => {
      worker.worker.shutdown();
      await running.catch(() => undefined);
      await worker.connection.close();
    };
  }

  beforeAll(async () => {
    scripted = await startScriptedServer({ port: 0, scripts });
    workspaceRoot = await mkdtemp(path.join(os.tmpdir(), 'tether-enc-'));
    stopWorker = await startWorker(env, taskQueue);
    connection = await connectTemporal({ address });
    const client = new Client({ connection, namespace: 'default', dataConverter: dataConverterFromEnv(env) });
    encrypted = { client, connection, namespace: 'default', taskQueue, close: async () => {} };
    plain = new Client({ connection, namespace: 'default' });
    const codec = dataConverterFromEnv(env, 'worker').payloadCodecs![0];
    plaintextSender = new Client({
      connection,
      namespace: 'default',
      dataConverter: { payloadCodecs: [{ encode: async (p) => p, decode: (p) => codec.decode(p) }], failureConverterPath: FAILURE_CONVERTER_PATH },
    });
  });

  afterAll(async () => {
    await stopWorker?.();
    await connection?.close();
    await scripted?.close();
    if (workspaceRoot) await rm(workspaceRoot, { recursive: true, force: true });
  });

  it('detects clear text in a history stored without a key (control)', async () => {
    const runId = `ops-enc-control-${Date.now()}`;
    // Started on a queue no worker polls: only the stored input matters here.
    const handle = await plain.workflow.start('agentRun', {
      taskQueue: `${taskQueue}-idle`,
      workflowId: runId,
      args: [{ goal: GOAL, model: 'scripted:secretive' }],
    });
    try {
      expect(rawText(await handle.fetchHistory())).toContain('GOAL-MARKER-7d1f');
    } finally {
      await handle.terminate('control done');
    }
  });

  it("keeps the run's goal, transcript and tool output out of the stored history, and decodes with the key", async () => {
    const { runId } = await startRun(encrypted, { goal: GOAL, model: 'scripted:secretive', tools: ['shell'] }, { id: `ops-enc-${Date.now()}` });
    const timer = new AbortController();
    const result = await Promise.race([
      waitForResult(encrypted, runId).finally(() => timer.abort()),
      sleep(30_000, undefined, { signal: timer.signal }).then(() => {
        throw new Error(
          'no result in 30 s: does createTetherWorker give the worker dataConverterFromEnv(env)? Without it the worker cannot read the encrypted input',
        );
      }),
    ]);
    expect(result.status).toBe('completed');
    expect(result.summary).toBe(SUMMARY);
    const transcript = JSON.stringify(await getTranscript(encrypted, runId));
    expect(transcript).toContain(TOOL_OUTPUT);
    expect(transcript).toContain(THOUGHT);

    const stored = rawText(await plain.workflow.getHandle(runId).fetchHistory());
    for (const marker of MARKERS) expect(stored).not.toContain(marker);
    expect(stored).toContain('binary/encrypted');
  });

  it('lists an encrypted run to a client without the key, goal left blank, and shows the goal to one with it', async () => {
    const { runId } = await startRun(encrypted, { goal: GOAL, model: 'scripted:secretive', tools: ['shell'] }, { id: `ops-enc-list-${Date.now()}` });
    const keyless = { ...encrypted, client: plain };
    const row = await eventually(
      `run ${runId} to be listed`,
      async () => (await listRuns(keyless, { limit: 1000 })).find((r) => r.runId === runId),
      (found) => found !== undefined,
    );
    expect(row!.goal).toBe('');
    expect((await listRuns(encrypted, { limit: 1000 })).find((r) => r.runId === runId)?.goal).toContain('GOAL-MARKER-7d1f');
    await waitForResult(encrypted, runId);
    // What `run --wait` and `status` ask without the key: the worker's sealed answer is named, with the way out.
    await expect(getStatus(keyless, runId)).rejects.toThrow(`run ${runId} answered with a payload this client cannot read: it is encrypted`);
  });

  it('fails a run started with a plaintext RunSpec at once, before any step', async () => {
    const handle = await plaintextSender.workflow.start('agentRun', {
      taskQueue,
      workflowId: `ops-enc-plain-${Date.now()}`,
      args: [{ goal: GOAL, model: 'scripted:secretive', tools: ['shell'], verify: { command: 'echo pwned' } }],
    });
    const failure = await handle.result().then(
      () => expect.unreachable('a plaintext RunSpec must not run'),
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause.type).toBe('failed');
    expect(cause.message).toMatch(/^invalid RunSpec: unencrypted payload refused: encryption is on/);
    const history = await handle.fetchHistory();
    expect(rawText(history)).toContain('GOAL-MARKER-7d1f');
    expect(history.events?.some((e) => e.activityTaskScheduledEventAttributes)).toBe(false);
  });

  it('ignores plaintext and forged signals, rejects a plaintext Update, and the run goes on', async () => {
    const { runId } = await startRun(
      encrypted,
      { goal: 'ask first', model: 'scripted:asker', tools: ['ask_user'], critic: { policy: 'off' } },
      { id: `ops-enc-ask-${Date.now()}` },
    );
    await eventually(
      `run ${runId} to ask its question`,
      () => getStatus(encrypted, runId),
      (s) => s.state === 'blocked',
    );
    const handle = plaintextSender.workflow.getHandle(runId);
    await handle.signal(controlSignals.kill, { reason: 'plaintext kill' });
    await handle.signal(controlSignals.answer, { text: 'plaintext answer' });
    const forged: Payload = {
      metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from('deadbeef') },
      data: Buffer.from('x'.repeat(64)),
    };
    const forger = new Client({
      connection,
      namespace: 'default',
      dataConverter: { payloadCodecs: [{ encode: async (p) => p.map(() => forged), decode: async (p) => p }] },
    });
    await forger.workflow.getHandle(runId).signal(controlSignals.kill, { reason: 'forged kill' });
    // An Update is handled after the signals sent before it, so its answer shows they changed nothing.
    const rejected = await handle.executeUpdate(controlUpdates.kill, { args: [{ reason: 'plaintext update' }] }).then(
      () => expect.unreachable('a plaintext Update must be rejected'),
      (err: unknown) => err as WorkflowUpdateFailedError,
    );
    expect(rejected).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(rejected.cause?.message).toMatch(/^kill: unencrypted payload refused/);
    expect((await getStatus(encrypted, runId)).state).toBe('blocked');
    await controlRun(encrypted, runId, 'answer', { text: 'yes, go on' });
    expect(await waitForResult(encrypted, runId)).toMatchObject({ status: 'completed', summary: 'went on' });
  });

  it('sends a kill as a Signal when the run cannot answer its Update, and the run applies it once a worker can run it', async () => {
    const queue = `${taskQueue}-kill-signal`;
    const stranger = await startWorker({ ...process.env, TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') }, queue);
    let strangerStopped: Promise<void> | undefined;
    const stopStranger = () => (strangerStopped ??= stranger());
    const { runId } = await startRun(
      encrypted,
      { goal: GOAL, model: 'scripted:secretive', tools: ['shell'] },
      { id: `ops-enc-kill-${Date.now()}`, taskQueue: queue },
    );
    const handle = plain.workflow.getHandle(runId);
    try {
      await eventually(
        `a workflow task of ${runId} to fail on the worker without its key`,
        async () => (await handle.fetchHistory()).events?.find((e) => e.workflowTaskFailedEventAttributes),
        (event) => event !== undefined,
      );
      const reason = 'stop it whatever its workers can do';
      await expect(controlRun(encrypted, runId, 'kill', { reason })).rejects.toThrow(
        /its workflow task keeps failing\), so the kill was sent as a Signal: Temporal has it and writes it into the run's history/,
      );
      // The server writes a Signal that comes while a task runs once that task ends (here: fails again).
      await eventually(
        'the kill in the history',
        async () => (await handle.fetchHistory()).events?.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'kill').length,
        (n) => n === 1,
      );
      await stopStranger();
      const stopKeeper = await startWorker(env, queue);
      try {
        expect(await waitForResult(encrypted, runId)).toMatchObject({ status: 'killed', cause: reason });
      } finally {
        await stopKeeper();
      }
    } finally {
      await stopStranger();
    }
  }, 120_000);

  it('has a run sealed with a key its worker lacks wait for a worker that holds it, and tells a client without the key which one it lacks', async () => {
    const queue = `${taskQueue}-other-key`;
    const otherKey = randomBytes(32).toString('base64');
    const stopStranger = await startWorker({ ...process.env, TETHER_ENCRYPTION_KEY: otherKey }, queue);
    const { runId } = await startRun(
      encrypted,
      { goal: GOAL, model: 'scripted:secretive', tools: ['shell'] },
      { id: `ops-enc-wait-${Date.now()}`, taskQueue: queue },
    );
    const handle = plain.workflow.getHandle(runId);
    try {
      const failedTask = await eventually(
        `a workflow task of ${runId} to fail on the worker without its key`,
        async () => (await handle.fetchHistory()).events?.find((e) => e.workflowTaskFailedEventAttributes),
        (event) => event !== undefined,
      );
      expect(failedTask!.workflowTaskFailedEventAttributes!.failure!.message).toContain('which is not among the configured keys');
      expect((await encrypted.client.workflow.getHandle(runId).describe()).status.name).toBe('RUNNING');
      // Temporal answers no query while the task fails: the client says so, and where to look, not the SDK's words alone.
      await expect(getStatus(encrypted, runId)).rejects.toThrow(`status: run ${runId} cannot answer: its workers fail its workflow task`);
    } finally {
      await stopStranger();
    }
    const stopKeeper = await startWorker(env, queue);
    try {
      expect(await waitForResult(encrypted, runId)).toMatchObject({ status: 'completed', summary: SUMMARY });
    } finally {
      await stopKeeper();
    }

    const cliEnv = { ...process.env, TEMPORAL_ADDRESS: address, TETHER_TASK_QUEUE: taskQueue };
    const keyId = (base64: string) => createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex').slice(0, 8);
    const wrong = await runCli(['status', runId, '--output', 'json'], { ...cliEnv, TETHER_ENCRYPTION_KEY: otherKey });
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout.trim().split('\n').pop()!).error.message).toBe(
      `payload was encrypted with key ${keyId(env.TETHER_ENCRYPTION_KEY)}, which is not among the configured keys (${keyId(otherKey)}); ` +
        `add key ${keyId(env.TETHER_ENCRYPTION_KEY)} to TETHER_ENCRYPTION_KEYS (a comma list; the key that seals new payloads first)`,
    );
    for (const args of [
      ['status', runId],
      ['history', runId],
      ['history', runId, '--audit'],
    ]) {
      const keyless = await runCli(args, { ...cliEnv, TETHER_ENCRYPTION_KEY: '', TETHER_ENCRYPTION_KEYS: '' });
      expect({ args, code: keyless.code }).toEqual({ args, code: 1 });
      expect(keyless.stderr).toContain('which is not among the configured keys (none is set here): set TETHER_ENCRYPTION_KEY (or TETHER_ENCRYPTION_KEYS)');
    }
  }, 120_000);
});
