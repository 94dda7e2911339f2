import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { controlRun } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { usePanelInBrowser } from './helpers/panel-browser.js';

const TOKEN = 'panel-timeline-token-0123456789';
const SCREENSHOT = fileURLToPath(new URL('../test-results/panel-timeline.png', import.meta.url));
const write = {
  reply: {
    text: 'Writing.',
    toolCalls: [{ name: 'write_file', args: { path: '<b>n</b>.txt', content: 'step {{step}}' } }],
    usage: { prompt: 750, completion: 0 },
  },
};

/** A first model call that gets a 503 and is retried, then steady spending until the budget pauses the run. */
const scripts: Record<string, Script> = {
  'retried-spender': {
    steps: [
      { ...write, faults: [{ kind: '503' }] },
      { ...write, repeat: 1_000, delayMs: 300 },
    ],
  } as Script,
};

const ui = usePanelInBrowser({ scripts, token: TOKEN, viewport: { width: 1280, height: 1450 } });

describe('the run page timeline in a real browser', () => {
  it('draws the waterfall live, shows a span’s details on focus, and marks the budget warnings on the cost curve', async () => {
    const cspErrors: string[] = [];
    ui.page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspErrors.push(message.text());
    });
    const runId = await ui.h.start({
      goal: 'spend',
      model: 'scripted:retried-spender',
      critic: { policy: 'off' },
      limits: { budgetUsd: 0.005, maxSteps: 1_000 },
    });
    await ui.page.goto(`${ui.panel.url}#/runs/${encodeURIComponent(runId)}`);
    await ui.page.waitForSelector('#waterfall g.span[data-kind="llm"]', { timeout: 20_000 });

    // Live: the budget pause comes after the page opened, and the waterfall draws it without a reload.
    await ui.page.waitForSelector('#waterfall g.span[data-kind="pause"]', { timeout: 60_000 });
    // The status cards follow the run's status on their own stream: they may show the pause a moment after the waterfall.
    await ui.page.waitForFunction(() => document.querySelector('#status')?.textContent?.includes('awaiting_approval'), undefined, { timeout: 30_000 });
    expect(await ui.page.locator('#waterfall g.span[data-kind="tool"]').count()).toBeGreaterThan(2);
    expect(await ui.page.getAttribute('#waterfall g.span[data-kind="pause"]', 'aria-label')).toContain('budget: waiting for approval');

    const retried = ui.page.locator('#waterfall g.span.retried').first();
    await retried.focus();
    await ui.page.waitForFunction(() => document.querySelector('#span-details')?.textContent?.includes('2 attempts'));
    const details = await ui.page.textContent('#span-details');
    expect(details).toContain('step 1');
    expect(details).toContain('503');
    expect(await retried.locator('title').textContent()).toContain('2 attempts');

    await ui.page.waitForSelector('#cost-curve .budget-line', { state: 'attached' });
    expect(await ui.page.locator('#cost-curve .warning-mark.crossed').evaluateAll((marks) => marks.map((m) => m.getAttribute('data-share')))).toEqual([
      '75',
      '80',
      '90',
    ]);
    expect(await ui.page.locator('#cost-curve .cost-line').getAttribute('points')).toMatch(/\d/);
    // Run data is text: a file name with markup is shown as written, never parsed.
    expect(await ui.page.locator('#waterfall g.span[data-kind="tool"] text.label').first().textContent()).toContain('<b>n</b>.txt');
    expect(await ui.page.locator('#waterfall b, #span-details b').count()).toBe(0);
    expect(cspErrors).toEqual([]);
    await ui.page.screenshot({ path: SCREENSHOT, fullPage: false });
    await controlRun(ui.h.tc, runId, 'kill', { reason: 'seen enough' });
  }, 120_000);

  it('answers the timeline route only with the token, and 404 for an unknown run', async () => {
    expect((await fetch(`${ui.panel.url}api/runs/nope/timeline`)).status).toBe(401);
    const unknown = await fetch(`${ui.panel.url}api/runs/no-such-run-${Date.now()}/timeline`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(unknown.status).toBe(404);
  });
});
