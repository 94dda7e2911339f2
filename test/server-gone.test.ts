import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTether, type TetherClient } from '../src/client/runs.js';
import { createLogger } from '../src/ops/logger.js';
import { startPanel, type Panel } from '../src/panel/server.js';
import { type DevServer, startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { createTetherWorker } from '../src/worker.js';
import { eventually } from './helpers/eventually.js';
import { openEvents } from './helpers/sse.js';

const TOKEN = 'panel-server-gone-token-0123456789';

let dir: string;
let server: DevServer | undefined;
let tc: TetherClient;
let panel: Panel;
let worker: Awaited<ReturnType<typeof createTetherWorker>> | undefined;
let running: Promise<void> | undefined;
/** The worker's log, as JSON lines: the first worker of this process installs the SDK runtime with it. */
const logLines: string[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _enc, done) {
    logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  },
});

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tether-server-gone-'));
  server = await startDevServer({ port: await freePort(), db: path.join(dir, 'temporal.db'), headless: true });
  tc = await connectTether({ address: server.address });
  panel = await startPanel({ client: tc, port: 0, token: TOKEN });
  worker = await createTetherWorker({
    address: server.address,
    taskQueue: `server-gone-${Date.now()}`,
    workspaceRoot: dir,
    logger: createLogger({ name: 'server-gone', destination: logStream }),
  });
  running = worker.worker.run();
});

afterAll(async () => {
  worker?.worker.shutdown();
  await running?.catch(() => undefined);
  await worker?.connection.close();
  await panel?.close();
  await tc?.close();
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const request = (p: string, init: RequestInit = {}) =>
  fetch(`${panel.url}${p}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });

describe('a panel whose Temporal server has gone away', () => {
  it('answers 503 and says the server did not answer, from a list, a run page, a control message and the live view alike', async () => {
    expect((await request('api/runs')).status).toBe(200);
    const events = await openEvents(`${panel.url}api/events?run=some-run`, TOKEN);
    await eventually('the first list of runs on the event stream', () => events.events.some((e) => e.event === 'runs'));
    await server!.stop();
    server = undefined;
    // The SDK retries a call the server does not answer for ~20 s (a restart that quick goes unnoticed); the three wait together.
    const answers = await Promise.all([
      request('api/runs'),
      request('api/runs/some-run'),
      request('api/runs/some-run/steer', { method: 'POST', body: JSON.stringify({ message: 'hello?' }) }),
    ]);
    for (const answer of answers) {
      expect(answer.status, answer.url).toBe(503);
      const { error } = (await answer.json()) as { error: string };
      expect(error, answer.url).toMatch(/^the Temporal server did not answer \(.+\); check that it is running/);
      expect(error, answer.url).not.toMatch(/internal error|Failed to describe/);
    }
    // The page's live view says the same, in the runs table and on the run's page (which said "no run" while the server was there).
    const serverGoneText = /^the Temporal server did not answer \(.+\); check that it is running/;
    for (const name of ['runs', 'run']) {
      await eventually(
        `a ${name} event saying the server did not answer`,
        () => events.events.some((e) => e.event === name && serverGoneText.test((e.data as { error?: string }).error ?? '')),
        Boolean,
        { timeoutMs: 60_000 },
      );
    }
    events.close();
  }, 90_000);
});

describe('a worker whose Temporal server has gone away', () => {
  it("logs the SDK core's failed polls as its own JSON lines, not in the core's console format", async () => {
    // Stopped by the panel's test when it ran first; the worker's pollers retry it either way.
    await server?.stop();
    server = undefined;
    const records = await eventually(
      'a warning of the SDK core in the worker log',
      () => logLines.map((line) => JSON.parse(line) as Record<string, unknown>),
      (all) => all.some((r) => r.component === 'core' && r.level === 40 && /poll/.test(String(r.msg))),
      { timeoutMs: 60_000 },
    );
    expect(records.filter((r) => r.component === 'core').every((r) => r.name === 'server-gone')).toBe(true);
  }, 90_000);
});
