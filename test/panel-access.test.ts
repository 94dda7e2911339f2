import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPanel, type Panel } from '../src/panel/server.js';
import type { Script } from '../src/scripted/script.js';
import { startHarness, type Harness } from './helpers/harness.js';

const TOKEN = 'panel-access-token-0123456789';
const call = (name: string, args: Record<string, unknown>) => ({ reply: { text: `Calling ${name}.`, toolCalls: [{ name, args }] } });
const scripts: Record<string, Script> = {
  sleeper: { steps: [call('shell', { command: 'sleep 300' })] } as Script,
};

let h: Harness;
let panel: Panel;
let home: string;

beforeAll(async () => {
  h = await startHarness({ scripts });
  panel = await startPanel({ client: h.tc, port: 0, token: TOKEN });
  home = await mkdtemp(path.join(os.tmpdir(), 'tether-home-'));
});

afterAll(async () => {
  await panel?.close();
  await h?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const get = (p: string, headers: Record<string, string> = {}) => fetch(`${panel.url}${p.replace(/^\//, '')}`, { headers });
const authed = { authorization: `Bearer ${TOKEN}` };
const post = (p: string, body: string, headers: Record<string, string> = authed) =>
  fetch(`${panel.url}${p.replace(/^\//, '')}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

describe('panel tokens', () => {
  it('refuses to start when TETHER_PANEL_TOKEN is set but empty, and says how to fix it', async () => {
    await expect(startPanel({ client: h.tc, port: 0, env: { TETHER_PANEL_TOKEN: '', TETHER_HOME: home } })).rejects.toThrow(
      /TETHER_PANEL_TOKEN is empty: set it to a long random value \(e\.g\. `openssl rand -hex 24`\), or unset it to have one generated/,
    );
  });

  it('refuses to start with a token shorter than 24 characters', async () => {
    await expect(startPanel({ client: h.tc, port: 0, env: { TETHER_PANEL_TOKEN: 'short-token', TETHER_HOME: home } })).rejects.toThrow(
      /TETHER_PANEL_TOKEN has 11 characters, fewer than the 24 required/,
    );
  });

  it('generates a token when none is set, saves it readable only by its owner, and keeps it across restarts', async () => {
    const first = await startPanel({ client: h.tc, port: 0, env: { TETHER_HOME: home } });
    let second: Panel | undefined;
    try {
      expect(first.tokenSource).toMatchObject({ source: 'generated', file: path.join(home, 'panel-token') });
      expect(first.token.length).toBeGreaterThanOrEqual(24);
      expect((await stat(path.join(home, 'panel-token'))).mode & 0o777).toBe(0o600);
      await first.close();
      second = await startPanel({ client: h.tc, port: 0, env: { TETHER_HOME: home } });
      expect(second.token).toBe(first.token);
      expect(second.tokenSource.source).toBe('file');
      const api = (authorization?: string) => fetch(`${second!.url}api/runs`, { headers: authorization === undefined ? {} : { authorization } });
      expect((await api(`Bearer ${first.token}`)).status).toBe(200);
      for (const header of [undefined, '', 'Bearer', 'Bearer ', `Bearer ${first.token.slice(0, -1)}`, `Basic ${first.token}`]) {
        expect((await api(header)).status, `Authorization: ${header}`).toBe(401);
      }
    } finally {
      await first.close();
      await second?.close();
    }
  });
});

describe('panel input that is wrong gets a 4xx, never a 500', () => {
  it('answers a malformed %-escape anywhere in the URL with 400', async () => {
    expect((await get('/api/runs/%E0%A4%A', authed)).status).toBe(400);
    expect((await post('/api/runs/%zz/steer', '{"message":"hi"}')).status).toBe(400);
    expect((await get('/api/events?run=%zz', authed)).status).toBe(400);
    expect((await get('/api/runs?state=%zz', authed)).status).toBe(400);
    const page = await get('/%zz');
    expect(page.status).toBe(400);
    expect(await page.json()).toEqual({ error: 'malformed URL: a %-escape does not decode' });
  });

  it('answers a list filter it does not know with 400 and the values it takes', async () => {
    const state = await get('/api/runs?state=sleeping', authed);
    expect(state.status).toBe(400);
    expect((await state.json()).error).toMatch(/^unknown state "sleeping": use one of running, /);
    const estop = await get('/api/runs?estop=yes', authed);
    expect(estop.status).toBe(400);
    expect((await estop.json()).error).toBe('estop must be "true" or "false", not "yes"');
    expect((await get('/api/runs?estop=false', authed)).status).toBe(200);
  });

  it('answers a body that is not an object, or not JSON, with 400 and the reason', async () => {
    const nullFleet = await post('/api/estop', 'null');
    expect(nullFleet.status).toBe(400);
    expect((await nullFleet.json()).error).toMatch(/expected object/);
    expect((await (await post('/api/estop', '{"action":"explode"}')).json()).error).toBe('action: must be "trip" or "clear"');
    // A blank reason is refused, as one run refuses it; leaving it out gives none.
    const blankReason = await post('/api/estop', '{"action":"trip","reason":""}');
    expect({ status: blankReason.status, body: await blankReason.json() }).toEqual({
      status: 400,
      body: { error: 'reason: must not be empty (leave it out to give none)' },
    });
    expect((await post('/api/runs/some-run/steer', '{not json')).status).toBe(400);
    const steer = await post('/api/runs/some-run/steer', '"just a string"');
    expect(steer.status).toBe(400);
    expect((await steer.json()).error).toBe('steer: Invalid input: expected object, received string');
    expect((await (await post('/api/runs', 'null')).json()).error).toMatch(/^invalid RunSpec: /);
    const relative = await post('/api/runs', JSON.stringify({ goal: 'g', model: 'scripted:x', workspace: 'relative/dir' }));
    expect(relative.status).toBe(400);
    expect((await relative.json()).error).toBe('invalid RunSpec: workspace "relative/dir" must be an absolute path on the worker');
  });

  it('answers run ids Temporal would reject, and workflows that are not runs, with 4xx', async () => {
    expect((await get(`/api/runs/${'a'.repeat(1_001)}`, authed)).status).toBe(400);
    expect((await get('/api/runs/%01', authed)).status).toBe(400);
    const other = await h.tc.client.workflow.start('fleetControl', { workflowId: `not-a-run-${Date.now()}`, taskQueue: h.taskQueue, args: [] });
    try {
      const response = await get(`/api/runs/${other.workflowId}`, authed);
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: 'not a Tether run: it has no status or transcript' });
    } finally {
      await other.terminate('test done');
    }
  });

  it('keeps the status codes of wrong methods and unknown routes', async () => {
    expect((await get('/api/runs/x/steer', authed)).status).toBe(405);
    expect((await get('/api/runs/x/explode', authed)).status).toBe(404);
    expect((await post('/api/config', '{}')).status).toBe(405);
    expect(await (await get('/api/nothing-here', authed)).json()).toEqual({ error: 'no such API route' });
    expect((await get('/nothing-here')).status).toBe(404);
    expect((await post('/api/runs', 'x'.repeat(1_000_001))).status).toBe(413);
  });

  it('sends the same security headers on every answer: page, API, errors', async () => {
    for (const response of [
      await get('/'),
      await get('/app.js'),
      await get('/api/runs'),
      await get('/api/runs', authed),
      await get('/nope'),
      await get('/%zz'),
    ]) {
      expect(response.headers.get('content-security-policy')).toBe(
        "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
      );
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('cache-control')).toBe('no-store');
    }
  });
});

describe('panel metrics', () => {
  /** Every `route` label value of the request counter. */
  async function routeLabels(): Promise<Set<string>> {
    const text = await (await get('/metrics')).text();
    return new Set([...text.matchAll(/^tether_panel_http_requests_total\{route="([^"]*)"/gm)].map((m) => m[1]));
  }

  it('labels requests by route template, unauthenticated ones as one label, unknown paths as one', async () => {
    for (let i = 0; i < 20; i++) {
      await get(`/api/runs/probe-${i}/steer`);
      await get(`/api/probe-${i}`);
      await get(`/probe-${i}`, authed);
      await get(`/api/runs/probe-${i}`, authed);
      await post(`/api/runs/probe-${i}/steer`, '{"message":"hi"}');
      await get(`/api/probe-${i}`, authed);
    }
    const labels = await routeLabels();
    expect([...labels].filter((label) => label.includes('probe'))).toEqual([]);
    expect(labels).toContain('unauthenticated');
    expect(labels).toContain('unknown');
    expect(labels).toContain('/api/runs/:id');
    expect(labels).toContain('/api/runs/:id/steer');
  });
});
