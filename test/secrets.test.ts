import { readFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { controlRun } from '../src/client/runs.js';
import { createLogger } from '../src/ops/logger.js';
import type { Script } from '../src/scripted/script.js';
import { runCli } from './helpers/cli-process.js';
import { startHarness, type Harness } from './helpers/harness.js';

const KEY = 'sk-test-NEVER-LEAK-5f3a9c0d1e2b';
const URL_PASSWORD = 'pw-NEVER-LEAK-77aa';

const scripts: Record<string, Script> = {
  echo: {
    steps: [
      { reply: { text: `Your key is ${KEY}`, toolCalls: [{ name: 'write_file', args: { path: 'key.txt', content: `${KEY}\n` } }] } },
      { reply: { toolCalls: [{ name: 'shell', args: { command: `cat key.txt; echo ${JSON.stringify(KEY).slice(1, -1)}` } }] } },
      { reply: { toolCalls: [{ name: 'finish', args: { summary: `done with ${KEY}` } }] } },
    ],
  },
};

/** Everything the Temporal server stored: the SQLite file and its write-ahead log. */
async function rawDatabase(): Promise<string> {
  const db = inject('temporalDbPath');
  const parts = await Promise.all([db, `${db}-wal`].map((file) => readFile(file).catch(() => Buffer.alloc(0))));
  return Buffer.concat(parts).toString('latin1');
}

describe('provider keys', () => {
  let h: Harness;
  const logLines: string[] = [];

  beforeAll(async () => {
    const env = { ...process.env, OPENAI_API_KEY: KEY, TETHER_TEST_SECRET_TOKEN: URL_PASSWORD };
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString('utf8'));
        done();
      },
    });
    h = await startHarness({ scripts, env, worker: { logger: createLogger({ name: 'test', level: 'debug', env, destination }) } });
  });
  afterAll(() => h?.stop());

  async function leaks(runId: string): Promise<string[]> {
    const history = JSON.stringify(await h.tc.client.workflow.getHandle(runId).fetchHistory());
    const status = JSON.stringify(await h.status(runId));
    const places = { history, status, logs: logLines.join(''), database: await rawDatabase() };
    return Object.entries(places)
      .filter(([, text]) => text.includes(KEY) || text.includes(URL_PASSWORD) || text.includes(JSON.stringify(KEY).slice(1, -1)))
      .map(([place]) => place);
  }

  it('refuses a control message that holds a key, as it refuses a spec that does: it would be kept in the history in clear', async () => {
    const env = { ...process.env, OPENAI_API_KEY: KEY, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    for (const args of [
      ['steer', 'any-run', `use ${KEY} for the call`],
      ['decide', 'any-run', '--edit', JSON.stringify({ command: `curl -H 'key: ${KEY}' example.com` })],
      ['kill', 'any-run', '--reason', `leaked ${KEY}`],
      ['estop', 'trip', '--all', '--reason', `k=${KEY}`],
      ['fork', 'any-run', '--at-step', '1', '--steer', `key ${KEY}`],
      ['fork', 'any-run', '--at-step', '1', '--as', KEY],
    ]) {
      const out = await runCli([...args, '--output', 'json'], env);
      expect(out.code, args.join(' ')).toBe(2);
      expect(out.stdout).toMatch(/contains the value of the secret OPENAI_API_KEY; a control message is stored in the run's history in clear/);
      expect(out.stdout).not.toContain(KEY);
    }
  });

  it("refuses, in a shell without the key, a spec or a steer that holds the worker's key, by the fingerprints the worker wrote", async () => {
    const { OPENAI_API_KEY: _, ...withoutKey } = process.env;
    const env = { ...withoutKey, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const id = `fingerprinted-${Date.now()}`;
    for (const args of [
      ['run', '--id', id, '--model', 'scripted:echo', '--system', `the key is ${KEY}`, 'go'],
      ['steer', 'any-run', `use ${KEY.slice(2, 24)} for the call`],
    ]) {
      const out = await runCli([...args, '--output', 'json'], env);
      expect(out.code, args.join(' ')).toBe(2);
      expect(out.stdout).toMatch(/contains part of a secret that a worker on this machine holds/);
      expect(out.stdout).not.toContain(KEY.slice(2, 24));
    }
    await expect(h.tc.client.workflow.getHandle(id).describe()).rejects.toThrow(/not found/i);
  });

  it('redacts a key the model echoes, in its text, its tool arguments and the tool outputs', async () => {
    const runId = await h.start({ goal: 'echo the key', model: 'scripted:echo', critic: { policy: 'off' } });
    const result = await h.result(runId);
    expect(result.status).toBe('completed');
    expect(result.summary).toContain('[redacted]');
    expect(await leaks(runId)).toEqual([]);
  });

  it('redacts a key that an HTTP client quotes in its error (an invalid header value)', async () => {
    const env = { ...process.env, OPENAI_API_KEY: `${KEY}\ninvalid`, OPENAI_BASE_URL: h.scripted.url };
    const own = await startHarness({ scripts, env, worker: { logger: createLogger({ name: 'test', level: 'debug', env, destination: sink(logLines) }) } });
    try {
      const runId = await own.start({ goal: 'talk', model: 'openai:gpt-4.1-mini', limits: { maxConsecutiveErrors: 1 }, critic: { policy: 'off' } });
      const stopped = await own.until(runId, (s) => s.state === 'emergency_stopped' || s.state === 'failed', 60_000);
      expect(stopped.emergencyStop.reason ?? stopped.cause).toMatch(/redacted/);
      if (stopped.state === 'emergency_stopped') await controlRun(own.tc, runId, 'kill', { reason: 'test over' });
      await own.result(runId);
      expect(await leaks(runId)).toEqual([]);
    } finally {
      await own.stop();
    }
  });

  it('redacts credentials in a base URL, which no secret-named variable holds', async () => {
    const url = new URL(h.scripted.url);
    url.username = 'user';
    url.password = URL_PASSWORD;
    const env = { ...process.env, OPENAI_API_KEY: 'sk-fine', OPENAI_BASE_URL: url.toString() };
    const own = await startHarness({ scripts, env, worker: { logger: createLogger({ name: 'test', level: 'debug', env, destination: sink(logLines) }) } });
    try {
      const runId = await own.start({ goal: 'talk', model: 'openai:gpt-4.1-mini', limits: { maxConsecutiveErrors: 1 }, critic: { policy: 'off' } });
      const stopped = await own.until(runId, (s) => s.state === 'emergency_stopped' || s.state === 'failed', 60_000);
      if (stopped.state === 'emergency_stopped') await controlRun(own.tc, runId, 'kill', { reason: 'test over' });
      await own.result(runId);
      expect(await leaks(runId)).toEqual([]);
    } finally {
      await own.stop();
    }
  });
});

function sink(lines: string[]): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
}
