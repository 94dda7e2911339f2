import { execFile, spawn } from 'node:child_process';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/*
 * Workspace checkpoints: one shadow git repository per run, outside the
 * workspace (under TETHER_HOME), so the tools never see it and the model's own
 * `.git` is left alone. Git's index makes each checkpoint incremental: only
 * files whose size or time changed are read again, and unchanged content is
 * stored once. Every commit is on disk before the tool's activity returns, so
 * a worker crash loses none that the run recorded.
 */

/** What git needs and nothing more: no user config, hooks, prompts or the worker's secrets. */
const GIT_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  HOME: '/nonexistent',
};
const IDENTITY = ['-c', 'user.name=tether', '-c', 'user.email=tether@localhost', '-c', 'core.hooksPath=/dev/null', '-c', 'gc.auto=0'];
const GIT_TIMEOUT_MS = 120_000;

/** The checkpoint repository of run `runId` under `root`. */
export function checkpointRepo(root: string, runId: string): string {
  return path.join(root, `${runId.replace(/[^A-Za-z0-9._-]/g, '_')}.git`);
}

function git(repo: string, workspace: string | null, args: string[]): Promise<string> {
  const where = workspace ? ['--git-dir', repo, '--work-tree', workspace] : ['--git-dir', repo];
  return new Promise((resolve, reject) => {
    execFile('git', [...IDENTITY, ...where, ...args], { env: GIT_ENV, timeout: GIT_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${args[0]}: ${stderr.trim() || err.message}`));
      else resolve(stdout.trim());
    });
  });
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

async function head(repo: string): Promise<string | null> {
  return git(repo, null, ['rev-parse', '--verify', '--quiet', 'HEAD']).catch(() => null);
}

/** Commits the workspace as it is (ignored files too: a checkpoint is the files, not a project's idea of its sources); returns HEAD. */
async function commitAll(repo: string, workspace: string, message: string): Promise<string> {
  await git(repo, workspace, ['add', '--all', '--force', '.']);
  const parent = await head(repo);
  const changed =
    parent === null ||
    (await git(repo, workspace, ['diff', '--cached', '--quiet']).then(
      () => false,
      () => true,
    ));
  // Nothing changed: the step's checkpoint is the previous commit, so a retried call records the same id.
  if (changed) await git(repo, workspace, ['commit', '--quiet', '--allow-empty', '--no-verify', '-m', message]);
  return (await head(repo))!;
}

/**
 * A worker that died inside `git add` leaves the index locked. Only this
 * run's calls, one at a time, use the repository, and git here is cut off at
 * its timeout, so a lock older than that is stale.
 */
async function clearStaleLock(repo: string): Promise<void> {
  const lock = path.join(repo, 'index.lock');
  const since = await stat(lock).then(
    (s) => Date.now() - s.mtimeMs,
    () => null,
  );
  if (since !== null && since > GIT_TIMEOUT_MS) await rm(lock, { force: true });
}

async function ensureRepo(repo: string): Promise<void> {
  if (await exists(path.join(repo, 'HEAD'))) return clearStaleLock(repo);
  await mkdir(path.dirname(repo), { recursive: true });
  await git(repo, null, ['init', '--quiet', '--bare']);
}

/** Takes the baseline (the workspace before the run's first checkpointed call) when the repository is new; its commit, or null. */
export async function checkpointBaseline(repo: string, workspace: string): Promise<string | null> {
  await ensureRepo(repo);
  if ((await head(repo)) !== null) return null;
  return commitAll(repo, workspace, 'baseline: the workspace before the first call');
}

/** Checkpoints the workspace after a call; returns the commit. */
export function checkpointWorkspace(repo: string, workspace: string, label: string): Promise<string> {
  return ensureRepo(repo).then(() => commitAll(repo, workspace, label));
}

/**
 * Writes the files of `commit` (from `source`'s repository) into `workspace`
 * and checkpoints the result in `target`'s, so the fork's own checkpoints go
 * on from there. Files already in the workspace and not in the commit stay.
 */
export async function restoreCheckpoint(source: string, commit: string, target: string, workspace: string): Promise<string> {
  if (!(await exists(path.join(source, 'HEAD')))) throw new Error(`no checkpoint repository at ${source} on this worker`);
  await git(source, null, ['cat-file', '-e', `${commit}^{commit}`]).catch(() => {
    throw new Error(`checkpoint ${commit} is not in ${source}`);
  });
  await extract(source, commit, workspace);
  return checkpointWorkspace(target, workspace, `restored ${commit} from ${path.basename(source)}`);
}

/** `git archive <commit> | tar -x`: file modes and symlinks as committed, and the source repository only read. */
function extract(repo: string, commit: string, workspace: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const archive = spawn('git', [...IDENTITY, '--git-dir', repo, 'archive', '--format=tar', commit], { env: GIT_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    const tar = spawn('tar', ['-x', '-f', '-', '-C', workspace], { env: GIT_ENV, stdio: ['pipe', 'ignore', 'pipe'] });
    let errors = '';
    archive.stderr.on('data', (d) => (errors += d));
    tar.stderr.on('data', (d) => (errors += d));
    archive.stdout.pipe(tar.stdin);
    const codes = [archive, tar].map((p) => new Promise<number | null>((done) => p.once('close', done)));
    Promise.all(codes).then(([a, t]) => (a === 0 && t === 0 ? resolve() : reject(new Error(`restore failed: ${errors.trim() || `exit ${a}/${t}`}`))), reject);
  });
}
