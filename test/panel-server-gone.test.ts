import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTether, type TetherClient } from '../src/client/runs.js';
import { startPanel, type Panel } from '../src/panel/server.js';
import { type DevServer, startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { openEvents, waitFor } from './helpers/sse.js';

const TOKEN = 'panel-server-gone-token-0123456789';

let dir: string;
let server: DevServer | undefined;
let tc: TetherClient;
let panel: Panel;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tether-server-gone-'));
  server = await startDevServer({ port: await freePort(), db: path.join(dir, 'temporal.db'), headless: true });
  tc = await connectTether({ address: server.address });
  panel = await startPanel({ client: tc, port: 0, token: TOKEN });
});

afterAll(async () => {
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
    await waitFor('the first list of runs on the event stream', () => events.events.find((e) => e.event === 'runs'));
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
      await waitFor(
        `a ${name} event saying the server did not answer`,
        () => events.events.find((e) => e.event === name && serverGoneText.test((e.data as { error?: string }).error ?? '')),
        60_000,
      );
    }
    events.close();
  }, 90_000);
});
