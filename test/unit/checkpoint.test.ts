import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, truncate, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CHECKPOINT_FILE_CAP_BYTES,
  checkpointBaseline,
  checkpointReporting,
  checkpointRepo,
  checkpointWorkspace,
  restoreCheckpoint,
} from '../../src/tools/checkpoint.js';

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function setUp() {
  const root = await mkdtemp(path.join(os.tmpdir(), 'tether-checkpoint-'));
  dirs.push(root);
  const workspace = path.join(root, 'ws');
  await mkdir(workspace);
  return { root, workspace, repo: checkpointRepo(path.join(root, 'checkpoints'), 'run:1/x') };
}

describe('workspace checkpoints (real git)', () => {
  it('names one repository per run, outside the workspace, with a safe file name', () => {
    expect(checkpointRepo('/home/checkpoints', 'run:1/x')).toBe('/home/checkpoints/run_1_x.git');
  });

  it('leaves out files over the size cap (a 1 TB sparse file a tool made in an instant), says which, and drops one that grew past it', async () => {
    const { workspace, repo } = await setUp();
    await writeFile(path.join(workspace, 'small.txt'), 'kept');
    await writeFile(path.join(workspace, 'grows.bin'), 'small at first');
    await checkpointBaseline(repo, workspace);
    await writeFile(path.join(workspace, 'huge.bin'), '');
    await truncate(path.join(workspace, 'huge.bin'), 2 ** 40);
    await truncate(path.join(workspace, 'grows.bin'), CHECKPOINT_FILE_CAP_BYTES + 1);
    const { commit, leftOut } = await checkpointReporting(repo, workspace, 'after a hostile call');
    expect(leftOut.sort()).toEqual(['grows.bin', 'huge.bin']);
    const { stdout } = await run('git', ['--git-dir', repo, 'ls-tree', '--name-only', commit]);
    expect(stdout.trim().split('\n')).toEqual(['small.txt']);
  });

  it('takes the baseline once, and a new commit only when files changed', async () => {
    const { workspace, repo } = await setUp();
    await writeFile(path.join(workspace, 'found.txt'), 'was here');
    const baseline = await checkpointBaseline(repo, workspace);
    expect(baseline).toMatch(/^[0-9a-f]{40}$/);
    expect(await checkpointBaseline(repo, workspace)).toBeNull();
    expect(await checkpointWorkspace(repo, workspace, 'nothing changed')).toBe(baseline);
    await writeFile(path.join(workspace, 'new.txt'), 'new');
    const next = await checkpointWorkspace(repo, workspace, 'after a call');
    expect(next).not.toBe(baseline);
    expect(existsSync(path.join(workspace, '.git'))).toBe(false);
  });

  it('answers the commit git itself names as HEAD, with loose or packed refs', async () => {
    const { workspace, repo } = await setUp();
    const head = async () => (await run('git', ['--git-dir', repo, 'rev-parse', 'HEAD'])).stdout.trim();
    await writeFile(path.join(workspace, 'a.txt'), 'a');
    expect(await checkpointBaseline(repo, workspace)).toBe(await head());
    await writeFile(path.join(workspace, 'b.txt'), 'b');
    expect(await checkpointWorkspace(repo, workspace, 'loose ref')).toBe(await head());
    await run('git', ['--git-dir', repo, 'pack-refs', '--all']);
    expect(existsSync(path.join(repo, 'refs', 'heads', 'master'))).toBe(false);
    const packed = await head();
    expect(await checkpointWorkspace(repo, workspace, 'nothing changed, packed ref')).toBe(packed);
    await writeFile(path.join(workspace, 'c.txt'), 'c');
    const next = await checkpointWorkspace(repo, workspace, 'packed ref, then a change');
    expect(next).not.toBe(packed);
    expect(next).toBe(await head());
  });
  it('takes the baseline again when its repository was removed by hand', async () => {
    const { workspace, repo } = await setUp();
    expect(await checkpointBaseline(repo, workspace)).toMatch(/^[0-9a-f]{40}$/);
    await rm(repo, { recursive: true });
    expect(await checkpointBaseline(repo, workspace)).toMatch(/^[0-9a-f]{40}$/);
  });

  it('finds the commit after the warnings git prints (embedded repositories)', async () => {
    const { workspace, repo } = await setUp();
    // Forty repositories of the model's own: git warns about each, over 2,000 bytes before the commit id.
    for (let i = 0; i < 40; i++) {
      const nested = path.join(workspace, `nested-${i}`);
      await run('git', ['init', '--quiet', nested]);
      await run('git', ['-C', nested, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '--allow-empty', '-m', 'own']);
    }
    await writeFile(path.join(workspace, 'file.txt'), 'content');
    expect(await checkpointWorkspace(repo, workspace, 'with nested repositories')).toMatch(/^[0-9a-f]{40}$/);
  });

  it('says why a checkpoint failed', async () => {
    const { root, repo } = await setUp();
    await expect(checkpointWorkspace(repo, path.join(root, 'gone'), 'one')).rejects.toThrow(/^checkpoint: .+/);
  });

  it('restores the files of a commit (ignored ones, modes and symlinks too) and checkpoints them in the fork repository', async () => {
    const { root, workspace, repo } = await setUp();
    await writeFile(path.join(workspace, '.gitignore'), 'build/\n');
    await mkdir(path.join(workspace, 'build'));
    await writeFile(path.join(workspace, 'build', 'out.bin'), 'built');
    await writeFile(path.join(workspace, 'run.sh'), '#!/bin/sh\necho hi\n');
    await chmod(path.join(workspace, 'run.sh'), 0o755);
    await symlink('run.sh', path.join(workspace, 'link'));
    const commit = await checkpointWorkspace(repo, workspace, 'step 1');
    await writeFile(path.join(workspace, 'later.txt'), 'after the fork point');
    await checkpointWorkspace(repo, workspace, 'step 2');

    const forkWorkspace = path.join(root, 'fork-ws');
    await mkdir(forkWorkspace);
    const forkRepo = checkpointRepo(path.join(root, 'checkpoints'), 'fork');
    const restored = await restoreCheckpoint(repo, commit, forkRepo, forkWorkspace);
    expect(restored).toMatch(/^[0-9a-f]{40}$/);
    expect(await readFile(path.join(forkWorkspace, 'build', 'out.bin'), 'utf8')).toBe('built');
    expect((await stat(path.join(forkWorkspace, 'run.sh'))).mode & 0o111).not.toBe(0);
    expect(await readlink(path.join(forkWorkspace, 'link'))).toBe('run.sh');
    expect(existsSync(path.join(forkWorkspace, 'later.txt'))).toBe(false);
    expect(await checkpointWorkspace(forkRepo, forkWorkspace, 'unchanged')).toBe(restored);
  });

  it("restores files byte for byte whatever the workspace's .gitattributes say, with the worker's umask", async () => {
    const { root, workspace, repo } = await setUp();
    await writeFile(path.join(workspace, '.gitattributes'), '* text eol=crlf\nkeep.txt export-ignore\nsubst.txt export-subst\n');
    await writeFile(path.join(workspace, 'lf.txt'), 'l1\nl2\n');
    await writeFile(path.join(workspace, 'crlf.txt'), 'c1\r\nc2\r\n');
    await writeFile(path.join(workspace, 'keep.txt'), 'kept');
    await writeFile(path.join(workspace, 'subst.txt'), '$Format:%H$');
    const commit = await checkpointWorkspace(repo, workspace, 'step 1');
    const forkWorkspace = path.join(root, 'fork-ws');
    await mkdir(forkWorkspace);
    await restoreCheckpoint(repo, commit, checkpointRepo(path.join(root, 'checkpoints'), 'fork'), forkWorkspace);
    for (const file of ['.gitattributes', 'lf.txt', 'crlf.txt', 'keep.txt', 'subst.txt'])
      expect(await readFile(path.join(forkWorkspace, file), 'utf8'), file).toBe(await readFile(path.join(workspace, file), 'utf8'));
    expect((await stat(path.join(forkWorkspace, 'lf.txt'))).mode & 0o777).toBe(0o666 & ~process.umask());
  });

  it("leaves Tether's home and the checkpoints out when the workspace holds them", async () => {
    const { workspace } = await setUp();
    const home = path.join(workspace, '.tether');
    await mkdir(path.join(home, 'checkpoints'), { recursive: true });
    await writeFile(path.join(home, 'secret.txt'), 'TOPSECRET');
    await writeFile(path.join(workspace, 'work.txt'), 'work');
    const hidden = [home, path.join(home, 'checkpoints')];
    const inHome = checkpointRepo(path.join(home, 'checkpoints'), 'run');
    await checkpointBaseline(inHome, workspace, hidden);
    const commit = await checkpointWorkspace(inHome, workspace, 'step 1', hidden);
    const { stdout } = await run('git', ['--git-dir', inHome, 'ls-tree', '-r', '--name-only', commit]);
    expect(stdout.trim().split('\n')).toEqual(['work.txt']);
  });

  it('says which checkpoint or repository is missing', async () => {
    const { root, workspace, repo } = await setUp();
    await checkpointWorkspace(repo, workspace, 'one');
    const target = checkpointRepo(root, 'fork');
    await expect(restoreCheckpoint(repo, 'f'.repeat(40), target, workspace)).rejects.toThrow(`checkpoint ${'f'.repeat(40)} is not in ${repo}`);
    await expect(restoreCheckpoint(path.join(root, 'nope.git'), 'f'.repeat(40), target, workspace)).rejects.toThrow('no checkpoint repository at');
  });

  it('clears an index lock a crashed worker left behind', async () => {
    const { workspace, repo } = await setUp();
    await checkpointWorkspace(repo, workspace, 'one');
    const lock = path.join(repo, 'index.lock');
    await writeFile(lock, '');
    const old = new Date(Date.now() - 10 * 60_000);
    await utimes(lock, old, old);
    await writeFile(path.join(workspace, 'two.txt'), '2');
    await expect(checkpointWorkspace(repo, workspace, 'two')).resolves.toMatch(/^[0-9a-f]{40}$/);
  });
});
