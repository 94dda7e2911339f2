import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getTranscript, startRun, waitForResult, type TetherClient } from '../src/client/runs.js';
import { dataConverterFromEnv } from '../src/ops/codec.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { createTetherWorker } from '../src/worker.js';
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
  let stopWorker: () => Promise<void>;

  beforeAll(async () => {
    scripted = await startScriptedServer({ port: 0, scripts });
    workspaceRoot = await mkdtemp(path.join(os.tmpdir(), 'tether-enc-'));
    // The worker reads the key from its environment, as `tether worker` does.
    const worker = await createTetherWorker({
      address,
      taskQueue,
      env,
      workflowBundle: await workflowBundle(),
      scriptedUrl: scripted.url,
      workspaceRoot,
      logger: pino({ level: 'silent' }),
      shutdownGraceMs: 2_000,
    });
    const running = worker.worker.run();
    stopWorker = async () => {
      worker.worker.shutdown();
      await running.catch(() => undefined);
      await worker.connection.close();
    };
    connection = await Connection.connect({ address });
    const client = new Client({ connection, namespace: 'default', dataConverter: dataConverterFromEnv(env) });
    encrypted = { client, connection, namespace: 'default', taskQueue, close: async () => {} };
    plain = new Client({ connection, namespace: 'default' });
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
    const handle = await plain.workflow.start('agentRun', { taskQueue: `${taskQueue}-idle`, workflowId: runId, args: [{ goal: GOAL, model: 'scripted:secretive' }] });
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
        throw new Error('no result in 30 s: does createTetherWorker give the worker dataConverterFromEnv(env)? Without it the worker cannot read the encrypted input');
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
});
