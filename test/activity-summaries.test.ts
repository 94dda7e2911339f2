import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../src/server/temporal-connection.js';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startRun, type TetherClient } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { dataConverterFromEnv } from '../src/ops/codec.js';
import type { Script } from '../src/scripted/script.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import { createTetherWorker } from '../src/worker.js';
import { workflowBundle } from './helpers/harness.js';
import { historyEvents } from './helpers/history.js';

const COMMAND = 'echo SUMMARY-MARKER-5e1f';
const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
const scripts: Record<string, Script> = {
  'every-tool': {
    steps: [
      call('write_file', { path: 'a.txt', content: 'CONTENT-MARKER-9a0b' }),
      call('read_file', { path: 'a.txt' }),
      call('shell', { command: COMMAND }),
      call('finish', { summary: 'done' }),
    ],
  },
};

/** The summaries of the activities a run scheduled and of its local activities (file tools), as stored (payloads left as they are). */
async function storedSummaries(client: Client, runId: string): Promise<temporal.api.common.v1.IPayload[]> {
  const events = await historyEvents(client.workflow.getHandle(runId));
  const activity = (e: (typeof events)[number]) =>
    e.activityTaskScheduledEventAttributes || e.markerRecordedEventAttributes?.markerName === 'core_local_activity';
  return events.flatMap((e) => (activity(e) && e.userMetadata?.summary ? [e.userMetadata.summary] : []));
}

/** A worker on a queue of its own, with `env` (e.g. an encryption key), and a client that speaks as it does. */
async function startWorker(scripted: ScriptedServer, env: NodeJS.ProcessEnv) {
  const address = inject('temporalAddress');
  const taskQueue = `summaries-${process.pid}-${Date.now()}-${randomBytes(2).toString('hex')}`;
  const { worker, connection: workerConnection } = await createTetherWorker({
    address,
    taskQueue,
    env,
    workflowBundle: await workflowBundle(),
    scriptedUrl: scripted.url,
    workspaceRoot: await mkdtemp(path.join(os.tmpdir(), 'tether-summaries-')),
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
  });
  const running = worker.run();
  const connection = await connectTemporal({ address });
  const client = new Client({ connection, namespace: 'default', dataConverter: dataConverterFromEnv(env) });
  const tc: TetherClient = { client, connection, namespace: 'default', taskQueue, close: async () => {} };
  const raw = new Client({ connection, namespace: 'default' });
  const stop = async () => {
    worker.shutdown();
    await running.catch(() => undefined);
    await workerConnection.close();
    await connection.close();
  };
  return { tc, raw, stop };
}

describe('activity summaries in the Temporal UI', () => {
  let scripted: ScriptedServer;
  beforeAll(async () => {
    scripted = await startScriptedServer({ port: 0, scripts });
  });
  afterAll(async () => scripted?.close());

  it('name each model call and tool call, and never a file content', async () => {
    const { tc, raw, stop } = await startWorker(scripted, process.env);
    try {
      const { runId } = await startRun(tc, { goal: 'g', model: 'scripted:every-tool', critic: { policy: 'off' } }, { id: `summaries-${Date.now()}` });
      expect((await waitForResult(tc, runId)).status).toBe('completed');
      const summaries = (await storedSummaries(raw, runId)).map((payload) => defaultPayloadConverter.fromPayload(payload));
      expect(summaries).toEqual([
        expect.stringMatching(/^claimWorkspace: bind summaries-\d+ to a worker$/),
        'callModel scripted:every-tool step 1',
        'write_file a.txt (19 chars)',
        'callModel scripted:every-tool step 2',
        'read_file a.txt',
        'callModel scripted:every-tool step 3',
        `shell: ${COMMAND}`,
        'callModel scripted:every-tool step 4',
      ]);
      expect(JSON.stringify(summaries)).not.toContain('CONTENT-MARKER-9a0b');
    } finally {
      await stop();
    }
  });

  it('are sealed like every other payload when encryption is on', async () => {
    const { tc, raw, stop } = await startWorker(scripted, { ...process.env, TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') });
    try {
      const { runId } = await startRun(tc, { goal: 'g', model: 'scripted:every-tool', critic: { policy: 'off' } }, { id: `summaries-sealed-${Date.now()}` });
      expect((await waitForResult(tc, runId)).status).toBe('completed');
      const stored = await storedSummaries(raw, runId);
      expect(stored).toHaveLength(8);
      for (const payload of stored) expect(Buffer.from(payload.metadata?.encoding ?? []).toString()).toBe('binary/encrypted');
      expect(stored.map((payload) => Buffer.from(payload.data ?? []).toString('latin1')).join('')).not.toContain('SUMMARY-MARKER-5e1f');
    } finally {
      await stop();
    }
  });
});
