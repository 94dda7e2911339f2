import { mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { executeTool } from '../../src/tools/execute.js';

/** A workspace that holds TETHER_HOME, as `tether run --workspace .` in a project whose .tether/ is the default home. */
async function workspaceHoldingHome(): Promise<{ workspace: string; env: NodeJS.ProcessEnv }> {
  const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-off-limits-'));
  const home = path.join(workspace, '.tether');
  await mkdir(home);
  await writeFile(path.join(home, 'panel-token'), 'the-panel-token-0123456789abcdef', { mode: 0o600 });
  await writeFile(path.join(workspace, 'notes.txt'), 'mine');
  return { workspace, env: { PATH: process.env.PATH, HOME: '/nonexistent', TETHER_HOME: home } };
}

describe('the file tools and what the sandbox hides', () => {
  it("refuses to read or write Tether's state inside the workspace, in every spelling, and still serves the workspace", async () => {
    const { workspace, env } = await workspaceHoldingHome();
    const ctx = { workspace, callId: 'c1', timeoutMs: 5_000, env };
    for (const p of ['.tether/panel-token', './.tether/panel-token', 'sub/../.tether/panel-token', '.tether', '.tether/new/file']) {
      const read = await executeTool('read_file', { path: p }, ctx);
      expect(read, p).toMatchObject({ success: false, error: expect.stringContaining('off limits to tools') });
      expect(JSON.stringify(read)).not.toContain('the-panel-token');
    }
    const write = await executeTool('write_file', { path: '.tether/planted.txt', content: 'x' }, ctx);
    expect(write).toMatchObject({ success: false, error: expect.stringContaining('off limits to tools') });
    await expect(readFile(path.join(workspace, '.tether', 'planted.txt'))).rejects.toThrow(/ENOENT/);
    expect(await executeTool('read_file', { path: 'notes.txt' }, ctx)).toMatchObject({ success: true, output: 'mine' });
    expect(await executeTool('write_file', { path: 'out/new.txt', content: 'ok' }, ctx)).toMatchObject({ success: true });
  });

  it('refuses a symlink in the workspace that leads into the hidden state', async () => {
    const { workspace, env } = await workspaceHoldingHome();
    await symlink('.tether', path.join(workspace, 'innocent'));
    const read = await executeTool('read_file', { path: 'innocent/panel-token' }, { workspace, callId: 'c2', timeoutMs: 5_000, env });
    expect(read).toMatchObject({ success: false, error: expect.stringContaining('off limits to tools') });
  });
});
