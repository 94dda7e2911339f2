import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Script } from '../src/scripted/script.js';
import { usePanelInBrowser } from './helpers/panel-browser.js';

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

const ui = usePanelInBrowser({ scripts, token: TOKEN });

const base = { critic: { policy: 'off' as const } };
const openRun = async (runId: string) => {
  await ui.page.goto(`${ui.panel.url}#/runs/${encodeURIComponent(runId)}`);
  await ui.page.waitForSelector('#status[data-state]');
};

describe('the web panel in a real browser', () => {
  it('refuses API requests without the token, even with a cookie', async () => {
    expect((await fetch(`${ui.panel.url}api/runs`)).status).toBe(401);
    expect((await fetch(`${ui.panel.url}api/runs`, { headers: { cookie: `token=${TOKEN}` } })).status).toBe(401);
    expect((await fetch(`${ui.panel.url}api/runs`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const ok = await fetch(`${ui.panel.url}api/runs`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    const pageResponse = await fetch(ui.panel.url);
    expect(pageResponse.headers.get('content-security-policy')).toContain("script-src 'self'");
    // The tab's icon is the page's own, not a 404 in the console.
    const icon = await fetch(new URL('/favicon.svg', ui.panel.url));
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
  });

  it('offers no control on the page of a run that does not exist, and says why', async () => {
    await ui.page.goto(`${ui.panel.url}#/runs/no-such-run-here`);
    await ui.page.waitForFunction(() => /no run with id/.test(document.querySelector('#flash')?.textContent ?? ''), undefined, { timeout: 20_000 });
    await ui.page.waitForFunction(() => (document.querySelector('#kill') as HTMLButtonElement | null)?.disabled === true, undefined, { timeout: 5_000 });
    expect(await ui.page.locator('#steer-text').isDisabled()).toBe(true);
  });

  it('lists a new run without a reload', async () => {
    await ui.page.goto(`${ui.panel.url}#/`);
    await ui.page.waitForSelector('#runs');
    const runId = await ui.h.start({ ...base, goal: 'walk', model: 'scripted:walker' });
    await ui.page.waitForSelector(`tr[data-run="${runId}"]`, { timeout: 20_000 });
    expect(await ui.page.textContent(`tr[data-run="${runId}"]`)).toContain('scripted:walker');
  });

  it('updates the run page live as the run takes steps', async () => {
    const runId = await ui.h.start({ ...base, goal: 'walk', model: 'scripted:walker' });
    await openRun(runId);
    const first = Number((await ui.page.textContent('#step'))!.split('/')[0]);
    await ui.page.waitForFunction((before) => Number(document.querySelector('#step')!.textContent!.split('/')[0]) >= before + 3, first, { timeout: 20_000 });
    expect(await ui.page.locator('#transcript .msg-tool').count()).toBeGreaterThan(0);
    await ui.page.screenshot({ path: SCREENSHOT, fullPage: false });
    await ui.h.tc.client.workflow.getHandle(runId).cancel();
  });

  it('extends the deadline from the page', async () => {
    const runId = await ui.h.start({ ...base, goal: 'sleep', model: 'scripted:sleeper', limits: { maxRuntime: '10m' } });
    await openRun(runId);
    const before = Date.parse((await ui.h.status(runId)).deadline);
    await ui.page.click('#extend-5m');
    await ui.page.waitForFunction(() => /extend: run is now running/.test(document.querySelector('#flash')!.textContent ?? ''));
    expect(Date.parse((await ui.h.status(runId)).deadline) - before).toBeGreaterThanOrEqual(299_000);
    // A refused message stays in the box to be mended; one the run took leaves it empty for the next.
    await ui.page.fill('#steer-text', '   ');
    await ui.page.click('#steer');
    await ui.page.waitForFunction(() => /steer message must not be empty/.test(document.querySelector('#flash')!.textContent ?? ''));
    expect(await ui.page.inputValue('#steer-text')).toBe('   ');
    await ui.page.fill('#steer-text', 'look at the logs first');
    await ui.page.click('#steer');
    await ui.page.waitForFunction(() => /steer: run is now/.test(document.querySelector('#flash')!.textContent ?? ''));
    expect(await ui.page.inputValue('#steer-text')).toBe('');
  });

  it('kills a run from the page, with a reason and a confirmation', async () => {
    const runId = await ui.h.start({ ...base, goal: 'sleep', model: 'scripted:sleeper' });
    await ui.h.until(runId, (s) => s.lastTool === 'shell');
    await openRun(runId);
    // No reason: refused on the page, before any confirmation is asked.
    const asked: string[] = [];
    const record = (dialog: { message(): string; dismiss(): Promise<void> }) => {
      asked.push(dialog.message());
      void dialog.dismiss();
    };
    ui.page.on('dialog', record);
    await ui.page.click('#kill');
    await ui.page.waitForFunction(() => /kill needs a reason/.test(document.querySelector('#flash')!.textContent ?? ''));
    ui.page.off('dialog', record);
    expect(asked).toEqual([]);
    await ui.page.fill('#kill-reason', 'killed from the browser');
    ui.page.once('dialog', (dialog) => void dialog.accept());
    await ui.page.click('#kill');
    expect(await ui.h.result(runId)).toMatchObject({ status: 'killed', cause: 'killed from the browser' });
    await ui.page.waitForFunction(() => document.querySelector('#status')?.getAttribute('data-state') === 'killed', undefined, { timeout: 15_000 });
  });

  it('shows a tripped emergency stop and resumes the run with the clear button', async () => {
    const runId = await ui.h.start({ ...base, goal: 'stumble', model: 'scripted:stumbles', limits: { maxConsecutiveErrors: 2 } });
    await openRun(runId);
    await ui.page.waitForFunction(() => /ACTIVE/.test(document.querySelector('#estop')?.textContent ?? ''), undefined, { timeout: 20_000 });
    expect(await ui.page.textContent('#state')).toContain('emergency_stopped');
    await ui.page.click('#estop-clear');
    expect(await ui.h.result(runId)).toMatchObject({ status: 'completed', summary: 'recovered after the clear' });
  });

  it('starts a run from the form and shows validation errors', async () => {
    await ui.page.goto(`${ui.panel.url}#/`);
    await ui.page.fill('#new-goal', 'from the form');
    await ui.page.fill('#new-model', 'not-a-model');
    await ui.page.click('#new-run button[type=submit]');
    await ui.page.waitForFunction(() => /model must be provider:name/.test(document.querySelector('#new-result')?.textContent ?? ''));
    await ui.page.fill('#new-model', 'scripted:walker');
    await ui.page.click('#new-run button[type=submit]');
    await ui.page.waitForFunction(() => location.hash.startsWith('#/runs/'));
    const runId = decodeURIComponent((await ui.page.evaluate(() => location.hash)).slice('#/runs/'.length));
    await ui.h.until(runId, (s) => s.step > 0);
    await ui.h.tc.client.workflow.getHandle(runId).cancel();
  });
});
