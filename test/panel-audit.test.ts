import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Panel, startPanel } from '../src/panel/server.js';
import type { Script } from '../src/scripted/script.js';
import type { Harness } from './helpers/harness.js';
import { type PanelInBrowser, startPanelInBrowser } from './helpers/panel-browser.js';

const SCREENSHOT = fileURLToPath(new URL('../test-results/panel-audit.png', import.meta.url));
const PANEL_TOKEN = 'panel-audit-shared-token-0123456789';
const ALICE = 'alice-token-0123456789abcdefgh';
const BOB = 'bob-token-0123456789abcdefghij';
const scripts: Record<string, Script> = {
  'hangs-again': { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'sleep 300' } }] } } as Script,
  'finishes-at-once': { steps: [{ reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } }] } as Script,
};

let h: Harness;
let panel: Panel;
let env: PanelInBrowser;

beforeAll(async () => {
  env = await startPanelInBrowser({ scripts, token: PANEL_TOKEN, env: { ...process.env, TETHER_PANEL_TOKENS: `alice:${ALICE},bob:${BOB}` } });
  ({ h, panel } = env);
}, 120_000);

afterAll(async () => {
  await env?.stop();
});

/** A browser tab of its own (its own session storage), signed in with `token`, on the run's page. */
async function operatorPage(token: string, runId: string): Promise<Page> {
  const page = await env.openTab(token);
  await page.goto(`${panel.url}#/runs/${encodeURIComponent(runId)}`);
  await page.waitForSelector('#state');
  return page;
}

describe('the audit trail in the panel', () => {
  it('names the operator whose token sent each control message, never one the body claims', async () => {
    expect(panel.operators).toEqual(['alice', 'bob']);
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-again', limits: { maxRuntime: '10m' }, critic: { policy: 'off' } });
    await h.until(runId, (s) => s.lastTool === 'shell');
    const alice = await operatorPage(ALICE, runId);
    const bob = await operatorPage(BOB, runId);

    await alice.fill('#steer-text', 'try <b>smaller</b> steps');
    await alice.click('#steer');
    await alice.waitForSelector('#audit li[data-action="steer"]');
    await bob.click('#extend-10-steps');
    await bob.waitForSelector('#audit li[data-action="extend"]');
    // A script with alice's token cannot sign as someone else; the shared token is "panel".
    const claim = await fetch(`${panel.url}api/runs/${encodeURIComponent(runId)}/kill`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'claimed', audit: { by: 'mallory', via: 'cli' } }),
    });
    expect(claim.status).toBe(200);
    await h.result(runId);

    const shared = await operatorPage(PANEL_TOKEN, runId);
    await shared.waitForSelector('#audit li[data-action="kill"]');
    const lines = await shared.locator('#audit li').allTextContents();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/steer by alice \(panel\): try <b>smaller<\/b> steps$/);
    expect(lines[1]).toMatch(/extend by bob \(panel\): \+10 steps$/);
    expect(lines[2]).toMatch(/kill by alice \(panel\): claimed$/);
    // Rendered as text: the steer's markup is not HTML.
    expect(await shared.locator('#audit b').count()).toBe(0);
    expect(lines.join('\n')).not.toContain('mallory');
    await shared.locator('#audit').scrollIntoViewIfNeeded();
    await shared.screenshot({ path: SCREENSHOT, fullPage: true });
    const { status } = (await (
      await fetch(`${panel.url}api/runs/${encodeURIComponent(runId)}`, { headers: { authorization: `Bearer ${PANEL_TOKEN}` } })
    ).json()) as { status: { audit: Array<{ by: string; via: string }> } };
    expect(status.audit.map((e) => `${e.by}/${e.via}`)).toEqual(['alice/panel', 'bob/panel', 'alice/panel']);
  });

  it('signs a fork with the operator whose token asked for it, never one the body claims', async () => {
    const original = await h.start({ goal: 'x', model: 'scripted:finishes-at-once', critic: { policy: 'off' } });
    await h.result(original);
    const res = await fetch(`${panel.url}api/runs/${encodeURIComponent(original)}/fork`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BOB}`, 'content-type': 'application/json' },
      body: JSON.stringify({ step: 0, audit: { by: 'mallory', via: 'cli' } }),
    });
    expect(res.status).toBe(201);
    const { runId } = (await res.json()) as { runId: string };
    await h.result(runId);
    expect((await h.status(runId)).audit?.[0]).toMatchObject({ action: 'fork', by: 'bob', via: 'panel' });
  });

  it('answers 401 to a token that names no operator', async () => {
    const res = await fetch(`${panel.url}api/runs`, { headers: { authorization: `Bearer ${ALICE}x` } });
    expect(res.status).toBe(401);
  });

  it('refuses to start with a short operator token', async () => {
    await expect(startPanel({ client: h.tc, port: 0, token: PANEL_TOKEN, env: { ...process.env, TETHER_PANEL_TOKENS: 'alice:short' } })).rejects.toThrow(
      /operator "alice" has 5 characters, fewer than the 24 required/,
    );
  });
});
