import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { controlRun, getTranscript } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { eventually } from './helpers/eventually.js';
import { usePanelInBrowser } from './helpers/panel-browser.js';

const TOKEN = 'panel-live-tokens-token-0123456789';
const SCREENSHOT = fileURLToPath(new URL('../test-results/panel-live-tokens.png', import.meta.url));
const TEXT = 'Thinking out loud, <b>slowly</b>: first the plan, then the files, then the checks.';

const scripts: Record<string, Script> = {
  // A slow provider: the reply's stream comes a piece at a time over seconds.
  trickle: {
    steps: [{ reply: { text: TEXT }, faults: [{ kind: 'trickle', ms: 6_000 }] }, { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } }],
  } as Script,
  // The same, for the call asked again too.
  'trickle-twice': {
    steps: [
      { reply: { text: TEXT }, faults: [{ kind: 'trickle', ms: 6_000, times: 2 }] },
      { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } },
    ],
  } as Script,
};

const ui = usePanelInBrowser({ scripts, token: TOKEN });

describe('live tokens on the run page in a real browser', () => {
  it('shows the model’s text growing while the call streams, before the step ends, as text', async () => {
    const { h, panel, page } = ui;
    const cspErrors: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspErrors.push(message.text());
    });
    const runId = await h.start({ goal: 'think aloud', model: 'scripted:trickle', critic: { policy: 'off' } });
    await page.goto(`${panel.url}#/runs/${encodeURIComponent(runId)}`);

    // Part of the reply is on the page while the call still streams: the run has no reply from the model yet.
    await page.waitForFunction(() => (document.querySelector('#live-tokens')?.textContent ?? '').length > 0, undefined, { timeout: 30_000 });
    const partial = (await page.textContent('#live-tokens')) ?? '';
    expect(TEXT.startsWith(partial)).toBe(true);
    expect(partial.length).toBeLessThan(TEXT.length);
    expect(await page.textContent('#live-tokens-state')).toContain('streaming');
    expect((await getTranscript(h.tc, runId)).filter((m) => m.role === 'assistant')).toEqual([]);
    await page.screenshot({ path: SCREENSHOT, fullPage: false });

    await page.waitForFunction((text) => document.querySelector('#live-tokens')?.textContent === text, TEXT, { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelector('#live-tokens-state')?.textContent?.includes('reply complete'), undefined, { timeout: 30_000 });
    // Markup in the model's text is shown as written, never parsed.
    expect(await page.locator('#live-tokens b').count()).toBe(0);
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
    expect(cspErrors).toEqual([]);
  }, 90_000);

  it('follows a run once for all the pages that watch it, each page getting the text', async () => {
    const { h, panel } = ui;
    const runId = await h.start({ goal: 'think aloud', model: 'scripted:trickle', critic: { policy: 'off' } });
    const pages = Array.from({ length: 3 }, () => new AbortController());
    const texts = pages.map(() => '');
    const reading = pages.map(async (stop, i) => {
      const response = await fetch(`${panel.url}api/runs/${encodeURIComponent(runId)}/tokens`, {
        headers: { authorization: `Bearer ${TOKEN}` },
        signal: stop.signal,
      });
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
        for (const [, data] of chunk.value.matchAll(/^event: token\ndata: (.*)$/gm)) texts[i] += (JSON.parse(data!) as { text: string }).text;
    });
    try {
      await eventually(
        'every page to see text',
        async () => texts,
        (t) => t.every((text) => text.length > 0),
        { timeoutMs: 30_000 },
      );
      const metrics = await (await fetch(`${panel.url}metrics`)).text();
      expect(metrics).toMatch(/tether_panel_token_streams\{of="pages"\} 3/);
      expect(metrics).toMatch(/tether_panel_token_streams\{of="runs"\} 1/);
    } finally {
      for (const stop of pages) stop.abort();
      await Promise.allSettled(reading);
    }
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
  }, 90_000);

  it('replaces the text of a call an emergency stop cut with the text of the call asked again after the clear', async () => {
    const { h, panel, page } = ui;
    const runId = await h.start({ goal: 'think aloud', model: 'scripted:trickle-twice', critic: { policy: 'off' } });
    await page.goto(`${panel.url}#/runs/${encodeURIComponent(runId)}`);
    // This run's page (the last test's may still be up as the route changes), with text of its call.
    await page.waitForFunction((id) => document.querySelector('h1')?.textContent === id, runId, { timeout: 30_000 });
    await page.waitForFunction(() => (document.querySelector('#live-tokens')?.textContent ?? '').length > 0, undefined, { timeout: 30_000 });
    await controlRun(h.tc, runId, 'emergencyStop', { reason: 'look before it goes on' });
    await page.waitForFunction(() => document.querySelector('#live-tokens-state')?.textContent?.includes('the call failed'), undefined, { timeout: 30_000 });
    // The call asked again is the same step's first attempt, as the cut one was: only its end tells them apart.
    await controlRun(h.tc, runId, 'clearEmergency', {});
    await page.waitForFunction(() => document.querySelector('#live-tokens-state')?.textContent?.includes('reply complete'), undefined, { timeout: 30_000 });
    expect(await page.textContent('#live-tokens')).toBe(TEXT);
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
  }, 90_000);

  it('ends the token stream of a run that has ended, so a reader knows nothing more will come', async () => {
    const { h, panel } = ui;
    const runId = await h.start({ goal: 'think aloud', model: 'scripted:trickle', critic: { policy: 'off' } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
    const response = await fetch(`${panel.url}api/runs/${encodeURIComponent(runId)}/tokens`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: AbortSignal.timeout(15_000),
    });
    const body = await response.text();
    expect(body).toMatch(/^: connected\n\n/);
    expect(body).toContain(`event: ended\ndata: ${JSON.stringify({ type: 'ended', runId })}\n\n`);
  }, 60_000);

  it('answers the token stream only with the panel token, and only for a run', async () => {
    expect((await fetch(`${ui.panel.url}api/runs/any/tokens`)).status).toBe(401);
    const unknown = await fetch(`${ui.panel.url}api/runs/no-such-run/tokens`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: expect.stringContaining('no run with id "no-such-run"') });
  });
});
