import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startRun } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { usePanelInBrowser } from './helpers/panel-browser.js';

const TOKEN = 'panel-first-hour-token-0123456789';
const call = (name: string, args: Record<string, unknown>) => ({ reply: { text: `Calling ${name}.`, toolCalls: [{ name, args }] } });

const scripts: Record<string, Script> = {
  writes: {
    steps: [call('write_file', { path: 'poem.txt', content: 'first line\nsecond line\n' }), call('finish', { summary: 'wrote the poem' })],
  } as Script,
  sleeper: { steps: [call('shell', { command: 'sleep 300' })] } as Script,
};

const ui = usePanelInBrowser({ scripts, token: TOKEN });

const openRun = async (runId: string) => {
  await ui.page.goto(`${ui.panel.url}#/runs/${encodeURIComponent(runId)}`);
  await ui.page.waitForSelector('#status[data-state]');
};

describe('the panel as a new user meets it', () => {
  it('shows a completed run with its result, summary and verification, no time left, and every control disabled', async () => {
    const runId = await ui.h.start({ goal: 'write a poem', model: 'scripted:writes', critic: { policy: 'off' }, verify: { command: 'cat poem.txt' } });
    expect((await ui.h.result(runId)).status).toBe('completed');
    await openRun(runId);
    await ui.page.waitForSelector('#verification', { timeout: 15_000 }).catch(async (err: Error) => {
      throw new Error(`${err.message}; the page says "${await ui.page.textContent('#flash')}"`);
    });
    expect(await ui.page.textContent('#summary')).toBe('Summary: wrote the poem');
    expect(await ui.page.textContent('#verification h3')).toMatch(/^Verification passed after 1 attempt\(s\) \(exit 0\)$/);
    expect(await ui.page.textContent('#verification pre')).toContain('first line\nsecond line');
    expect(await ui.page.textContent('#deadline-left')).toBe('ended');
    const enabled = await ui.page.$$eval('section[aria-label="Actions"] button, section[aria-label="Actions"] input', (nodes) =>
      nodes.filter((n) => !(n as HTMLButtonElement).disabled).map((n) => n.id),
    );
    expect(enabled).toEqual([]);
  });

  it('shows an ended run whose worker is gone: its result, and why its transcript is missing', async () => {
    const queue = `gone-${Date.now()}`;
    const { runId } = await startRun({ ...ui.h.tc, taskQueue: queue }, { goal: 'orphaned', model: 'scripted:writes' });
    await ui.h.tc.client.workflow.getHandle(runId).terminate('its worker is gone');
    await openRun(runId);
    await ui.page.waitForSelector('#cause', { timeout: 15_000 });
    expect(await ui.page.textContent('#cause')).toBe('Cause: terminated: its worker is gone');
    expect(await ui.page.textContent('#transcript-unavailable')).toMatch(
      /\(none has polled it lately\): start one on that queue \(`TETHER_TASK_QUEUE=gone-\d+ tether worker`\) and ask again, or read the run with `tether history /,
    );
  });

  it('pretty-prints tool arguments with real line breaks', async () => {
    const runId = await ui.h.start({ goal: 'write a poem', model: 'scripted:writes', critic: { policy: 'off' } });
    await ui.h.result(runId);
    await openRun(runId);
    await ui.page.waitForSelector('.msg pre.tool-call');
    const args = await ui.page.textContent('.msg pre.tool-call');
    expect(args).toBe('→ write_file {\n  "path": "poem.txt",\n  "content": "first line\nsecond line\n"\n}');
  });

  it('answers a wrong token with the login form again, saying the token was refused', async () => {
    const tab = await ui.page.context().newPage();
    try {
      await tab.goto(`${ui.panel.url}#token=not-the-token-at-all-0123456789`);
      await tab.waitForSelector('#login #token-input');
      expect(await tab.textContent('#flash')).toContain('That token was refused');
      expect(await tab.$('tr[data-run]')).toBeNull();
    } finally {
      await tab.close();
    }
  });

  it('lists runs by their goal, with the id beside it', async () => {
    const runId = await ui.h.start({ goal: 'a goal people recognise', model: 'scripted:sleeper', critic: { policy: 'off' } });
    await ui.page.goto(`${ui.panel.url}#/`);
    await ui.page.waitForSelector(`tr[data-run="${runId}"]`, { timeout: 20_000 });
    expect(await ui.page.textContent(`tr[data-run="${runId}"] .goal`)).toBe('a goal people recognise');
    expect(await ui.page.textContent(`tr[data-run="${runId}"] .run-id`)).toBe(runId);
    expect(await ui.page.getAttribute('#temporal-runs', 'href')).toBe(
      `http://localhost:8233/namespaces/default/workflows?query=${encodeURIComponent("WorkflowType = 'agentRun'")}`,
    );
    await ui.h.tc.client.workflow.getHandle(runId).cancel();
  });

  it('starts a run with a workspace and a verification command from the form', async () => {
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-form-ws-'));
    await ui.page.goto(`${ui.panel.url}#/`);
    await ui.page.fill('#new-goal', 'from the form, verified');
    await ui.page.fill('#new-model', 'scripted:writes');
    await ui.page.fill('#new-workspace', workspace);
    await ui.page.fill('#new-verify', 'test -f poem.txt');
    await ui.page.click('#new-run button[type=submit]');
    await ui.page.waitForFunction(() => location.hash.startsWith('#/runs/'));
    const runId = decodeURIComponent((await ui.page.evaluate(() => location.hash)).slice('#/runs/'.length));
    expect(await ui.h.result(runId)).toMatchObject({ status: 'completed', verify: { passed: true } });
    expect(existsSync(path.join(workspace, 'poem.txt'))).toBe(true);
  });
});
