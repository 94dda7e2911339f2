import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Panel } from '../src/panel/server.js';
import type { Script } from '../src/scripted/script.js';
import type { Harness } from './helpers/harness.js';
import { type PanelInBrowser, startPanelInBrowser } from './helpers/panel-browser.js';

const TOKEN = 'panel-test-token-0123456789';
// Not docs/: the README's picture is taken from a real `tether demo` (docs/demo-run.png), not from this fixture.
const SCREENSHOT = fileURLToPath(new URL('../test-results/panel-run.png', import.meta.url));
const call = (name: string, args: Record<string, unknown>) => ({ reply: { text: `Calling ${name}.`, toolCalls: [{ name, args }] } });

const scripts: Record<string, Script> = {
  walker: {
    steps: [{ ...call('write_file', { path: 'n.txt', content: 'step {{step}}' }), repeat: 40, delayMs: 250 }, call('finish', { summary: 'walked' })],
  } as Script,
  sleeper: { steps: [call('shell', { command: 'sleep 300' })] } as Script,
  stumbles: {
    steps: [
      call('shell', { command: 'echo "no such file"; exit 1' }),
      call('shell', { command: 'exit 1' }),
      call('finish', { summary: 'recovered after the clear' }),
    ],
  } as Script,
};

let h: Harness;
let panel: Panel;
let env: PanelInBrowser;
let page: Page;

beforeAll(async () => {
  env = await startPanelInBrowser({ scripts, token: TOKEN });
  ({ h, panel } = env);
  page = await env.openTab(TOKEN);
}, 120_000);

afterAll(async () => {
  await env?.stop();
});

const base = { critic: { policy: 'off' as const } };
const openRun = async (runId: string) => {
  await page.goto(`${panel.url}#/runs/${encodeURIComponent(runId)}`);
  await page.waitForSelector('#status[data-state]');
};

describe('the web panel in a real browser', () => {
  it('refuses API requests without the token, even with a cookie', async () => {
    expect((await fetch(`${panel.url}api/runs`)).status).toBe(401);
    expect((await fetch(`${panel.url}api/runs`, { headers: { cookie: `token=${TOKEN}` } })).status).toBe(401);
    expect((await fetch(`${panel.url}api/runs`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const ok = await fetch(`${panel.url}api/runs`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    const pageResponse = await fetch(panel.url);
    expect(pageResponse.headers.get('content-security-policy')).toContain("script-src 'self'");
  });

  it('lists a new run without a reload', async () => {
    await page.goto(`${panel.url}#/`);
    await page.waitForSelector('#runs');
    const runId = await h.start({ ...base, goal: 'walk', model: 'scripted:walker' });
    await page.waitForSelector(`tr[data-run="${runId}"]`, { timeout: 20_000 });
    expect(await page.textContent(`tr[data-run="${runId}"]`)).toContain('scripted:walker');
  });

  it('updates the run page live as the run takes steps', async () => {
    const runId = await h.start({ ...base, goal: 'walk', model: 'scripted:walker' });
    await openRun(runId);
    const first = Number((await page.textContent('#step'))!.split('/')[0]);
    await page.waitForFunction((before) => Number(document.querySelector('#step')!.textContent!.split('/')[0]) >= before + 3, first, { timeout: 20_000 });
    expect(await page.locator('#transcript .msg-tool').count()).toBeGreaterThan(0);
    await page.screenshot({ path: SCREENSHOT, fullPage: false });
    await h.tc.client.workflow.getHandle(runId).cancel();
  });

  it('extends the deadline from the page', async () => {
    const runId = await h.start({ ...base, goal: 'sleep', model: 'scripted:sleeper', limits: { maxRuntime: '10m' } });
    await openRun(runId);
    const before = Date.parse((await h.status(runId)).deadline);
    await page.click('#extend-5m');
    await page.waitForFunction(() => /extend: run is now running/.test(document.querySelector('#flash')!.textContent ?? ''));
    expect(Date.parse((await h.status(runId)).deadline) - before).toBeGreaterThanOrEqual(299_000);
    await page.fill('#steer-text', '');
    await page.click('#steer');
    await page.waitForFunction(() => /steer message must not be empty/.test(document.querySelector('#flash')!.textContent ?? ''));
  });

  it('kills a run from the page, with a reason and a confirmation', async () => {
    const runId = await h.start({ ...base, goal: 'sleep', model: 'scripted:sleeper' });
    await h.until(runId, (s) => s.lastTool === 'shell');
    await openRun(runId);
    await page.fill('#kill-reason', 'killed from the browser');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('#kill');
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: 'killed from the browser' });
    await page.waitForFunction(() => document.querySelector('#status')?.getAttribute('data-state') === 'killed', undefined, { timeout: 15_000 });
  });

  it('shows a tripped emergency stop and resumes the run with the clear button', async () => {
    const runId = await h.start({ ...base, goal: 'stumble', model: 'scripted:stumbles', limits: { maxConsecutiveErrors: 2 } });
    await openRun(runId);
    await page.waitForFunction(() => /ACTIVE/.test(document.querySelector('#estop')?.textContent ?? ''), undefined, { timeout: 20_000 });
    expect(await page.textContent('#state')).toContain('emergency_stopped');
    await page.click('#estop-clear');
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'recovered after the clear' });
  });

  it('starts a run from the form and shows validation errors', async () => {
    await page.goto(`${panel.url}#/`);
    await page.fill('#new-goal', 'from the form');
    await page.fill('#new-model', 'not-a-model');
    await page.click('#new-run button[type=submit]');
    await page.waitForFunction(() => /model must be provider:name/.test(document.querySelector('#new-result')?.textContent ?? ''));
    await page.fill('#new-model', 'scripted:walker');
    await page.click('#new-run button[type=submit]');
    await page.waitForFunction(() => location.hash.startsWith('#/runs/'));
    const runId = decodeURIComponent((await page.evaluate(() => location.hash)).slice('#/runs/'.length));
    await h.until(runId, (s) => s.step > 0);
    await h.tc.client.workflow.getHandle(runId).cancel();
  });
});
