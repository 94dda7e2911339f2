import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { controlRun, getTranscript } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { usePanelInBrowser } from './helpers/panel-browser.js';

const TOKEN = 'panel-approval-token-0123456789';
const shell = (command: string) => ({ reply: { text: 'Running it.', toolCalls: [{ name: 'shell', args: { command } }] } });
const finish = { reply: { toolCalls: [{ name: 'finish', args: { summary: 'decided in the browser' } }] } };

// The command carries markup: the page must show it as text, never as HTML.
const COMMAND = 'echo "<b>approved</b>" > out.txt';
const scripts: Record<string, Script> = {
  'gated-write': { steps: [shell(COMMAND), finish] } as Script,
};

const ui = usePanelInBrowser({ scripts, token: TOKEN });

async function startGated(): Promise<{ runId: string; workspace: string }> {
  const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-panel-approval-'));
  const runId = await ui.h.start({ goal: 'write', model: 'scripted:gated-write', workspace, approvals: [{ tool: 'shell' }], critic: { policy: 'off' } });
  await ui.page.goto(`${ui.panel.url}#/runs/${encodeURIComponent(runId)}`);
  await ui.page.waitForSelector('#pending-call:not([hidden])', { timeout: 30_000 });
  return { runId, workspace };
}

describe('tool approval in the panel', () => {
  it('shows the held call in full and approves it', async () => {
    const { runId, workspace } = await startGated();
    expect(await ui.page.textContent('#state')).toContain('awaiting_tool_approval');
    expect(await ui.page.textContent('#pending-title')).toContain('shell');
    expect(await ui.page.textContent('#pending-args')).toContain(COMMAND.replaceAll('"', '\\"'));
    expect(await ui.page.locator('#pending-args b').count()).toBe(0);
    // The API route scripts use answers a stale decision with 400 and the validator's message.
    const stale = await fetch(`${ui.panel.url}api/runs/${encodeURIComponent(runId)}/decide`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ callId: 'call_old_0', decision: 'approve' }),
    });
    expect(stale.status).toBe(400);
    expect(((await stale.json()) as { error: string }).error).toContain('stale callId "call_old_0"');
    await ui.page.click('#decide-approve');
    expect(await ui.h.result(runId)).toMatchObject({ status: 'completed', summary: 'decided in the browser' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('<b>approved</b>\n');
    await ui.page.waitForSelector('#pending-call', { state: 'hidden' });
  });

  it('denies a call with a reason the model reads, and asks for one first', async () => {
    const { runId, workspace } = await startGated();
    await ui.page.waitForSelector('#pending-call', { state: 'visible' });
    await ui.page.click('#decide-deny');
    await ui.page.waitForFunction(() => /deny needs a reason/.test(document.querySelector('#flash')!.textContent ?? ''));
    expect((await ui.h.status(runId)).state).toBe('awaiting_tool_approval');
    await ui.page.fill('#deny-reason', 'not from the browser');
    await ui.page.click('#decide-deny');
    expect(await ui.h.result(runId)).toMatchObject({ status: 'completed' });
    await expect(readFile(path.join(workspace, 'out.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    const tool = (await getTranscript(ui.h.tc, runId)).find((m) => m.role === 'tool');
    expect(tool && 'content' in tool ? tool.content : '').toContain('not from the browser');
  });

  it('hides the held call once the run ends while it waits, as no decision is possible then', async () => {
    const { runId } = await startGated();
    // A kill takes the run from awaiting_tool_approval straight to killed, with no running state between.
    await controlRun(ui.h.tc, runId, 'kill', { reason: 'ended while held' });
    await ui.page.waitForFunction(() => document.querySelector('#status')?.textContent?.includes('killed'), undefined, { timeout: 30_000 });
    await ui.page.waitForSelector('#pending-call', { state: 'hidden', timeout: 5_000 });
    expect(await ui.page.locator('#decide-approve').isDisabled()).toBe(true);
  });

  it('keeps the held call open while the run is emergency-stopped; the decision made then applies when it is cleared', async () => {
    const { runId, workspace } = await startGated();
    await controlRun(ui.h.tc, runId, 'emergencyStop', { reason: 'look first' });
    await ui.page.waitForFunction(() => document.querySelector('#state')?.textContent?.includes('emergency_stopped'), undefined, { timeout: 30_000 });
    await ui.page.waitForFunction(() => /applies the decision when it goes on/.test(document.querySelector('#pending-title')?.textContent ?? ''));
    expect(await ui.page.locator('#pending-call').isVisible()).toBe(true);
    await ui.page.click('#decide-approve');
    await ui.page.waitForFunction(() => /decide: run is now/.test(document.querySelector('#flash')?.textContent ?? ''), undefined, { timeout: 10_000 });
    await controlRun(ui.h.tc, runId, 'clearEmergency', {});
    expect(await ui.h.result(runId)).toMatchObject({ status: 'completed' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('<b>approved</b>\n');
  });

  it('runs edited arguments, and says so when the edit is not JSON', async () => {
    const { runId, workspace } = await startGated();
    await ui.page.fill('#edit-args', '{ nope');
    await ui.page.click('#decide-edit');
    await ui.page.waitForFunction(() => /not JSON/.test(document.querySelector('#flash')?.textContent ?? ''));
    await ui.page.fill('#edit-args', JSON.stringify({ command: 'echo edited > out.txt' }));
    await ui.page.click('#decide-edit');
    expect(await ui.h.result(runId)).toMatchObject({ status: 'completed' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('edited\n');
  });
});
