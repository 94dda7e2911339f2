import { link, mkdir, mkdtemp, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBounded } from '../../src/tools/safe-read.js';
import { openDirectoryWithin, WorkspaceEscapeError, writeFileAtomic } from '../../src/tools/workspace.js';

async function layout() {
  const root = await mkdtemp(path.join(os.tmpdir(), 'tether-races-'));
  const workspace = path.join(root, 'ws');
  const outside = path.join(root, 'outside');
  await mkdir(workspace);
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), 'outside');
  return { workspace, outside };
}

describe('file tools against a workspace that changes under them', () => {
  it('refuses a write whose directory became a link out after the path was checked, leaving nothing outside', async () => {
    const { workspace, outside } = await layout();
    // The state a swap leaves between resolveInWorkspace and the write.
    await symlink(outside, path.join(workspace, 'swap'));
    await expect(writeFileAtomic(path.join(workspace, 'swap', 'f.txt'), 'x', workspace)).rejects.toBeInstanceOf(WorkspaceEscapeError);
    expect(await readdir(outside)).toEqual(['secret.txt']);
  });

  it('makes no directory outside when a directory on the way became a link out', async () => {
    const { workspace, outside } = await layout();
    await symlink(outside, path.join(workspace, 'swap'));
    await expect(writeFileAtomic(path.join(workspace, 'swap', 'n1', 'n2', 'f.txt'), 'x', workspace)).rejects.toBeInstanceOf(WorkspaceEscapeError);
    await expect(openDirectoryWithin(workspace, path.join(workspace, 'ok', 'swap', 'deeper'))).resolves.toBeTruthy();
    await symlink(outside, path.join(workspace, 'ok', 'swap', 'deeper', 'link'));
    await expect(openDirectoryWithin(workspace, path.join(workspace, 'ok', 'swap', 'deeper', 'link', 'made'))).rejects.toBeInstanceOf(WorkspaceEscapeError);
    expect(await readdir(outside)).toEqual(['secret.txt']);
    await expect(openDirectoryWithin(workspace, path.join(workspace, '..', 'outside'))).rejects.toBeInstanceOf(WorkspaceEscapeError);
  });

  it('still writes inside the workspace through its own directories', async () => {
    const { workspace } = await layout();
    await writeFileAtomic(path.join(workspace, 'a', 'b.txt'), 'hello', workspace);
    expect(await readFile(path.join(workspace, 'a', 'b.txt'), 'utf8')).toBe('hello');
    expect(await readdir(path.join(workspace, 'a'))).toEqual(['b.txt']);
  });

  it('does not read a file through a directory that became a link out, nor a file with other hard links', async () => {
    const { workspace, outside } = await layout();
    await symlink(outside, path.join(workspace, 'swap'));
    const swapped = await readBounded(path.join(workspace, 'swap', 'secret.txt'), 'swap/secret.txt', 1_000, workspace);
    expect(swapped).toMatchObject({ ok: false, error: expect.stringMatching(/outside the workspace/) });
    await link(path.join(outside, 'secret.txt'), path.join(workspace, 'hard.txt'));
    const hard = await readBounded(path.join(workspace, 'hard.txt'), 'hard.txt', 1_000, workspace);
    expect(hard).toMatchObject({ ok: false, error: expect.stringMatching(/hard links/) });
  });
});
