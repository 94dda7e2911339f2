import { execFile, spawn } from 'node:child_process';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { scriptRunner } from './checkpoint-runner.js';

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
/** `maintenance.auto=false`: otherwise every commit forks `git maintenance run --auto`, which `gc.auto=0` makes a no-op, at ~2 ms a commit. */
const IDENTITY = [
  '-c',
  'user.name=tether',
  '-c',
  'user.email=tether@localhost',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
];
const GIT_TIMEOUT_MS = 120_000;
/**
 * Files larger than this (their apparent size) are left out of checkpoints:
 * git reads every byte of a file to hash it, and a tool can make a 1 TB sparse
 * file in an instant, which would cost every later checkpoint minutes of a core.
 */
export const CHECKPOINT_FILE_CAP_BYTES = 64 * 2 ** 20;
/**
 * Every checkpoint repository's `info/attributes`, which outranks the
 * workspace's own `.gitattributes`: files are stored and restored byte for
 * byte. Otherwise a project's `text eol=crlf` would rewrite line endings on
 * restore, and `export-ignore` or `export-subst` would drop or rewrite files
 * in the archive a fork is restored from.
 */
const AS_THEY_ARE = '* -text -filter -ident -export-ignore -export-subst !eol !working-tree-encoding';

/**
 * One checkpoint, run by the checkpoint runner (src/tools/checkpoint-runner.ts),
 * so the worker itself forks no process for it.
 * Arguments: repository, workspace, commit message, `baseline` or `after`,
 * then the pathspecs of what the checkpoint leaves out.
 * A baseline of a repository that has a commit prints nothing; otherwise the
 * script prints HEAD last. A call that changed nothing makes no commit; the
 * common case, a call that changed files, costs two git commands (add,
 * commit): HEAD is read from the branch's ref file with the shell's own
 * `read`, and only asked of git when that file is missing (a repository
 * without a commit, or packed refs). A new repository's first commit of an
 * empty workspace (most runs start with one) needs no `git add`.
 * `--template=`: no sample hooks or description copied into every run's
 * repository (116 KB to 36 KB when new; hooks never run here).
 */
const CHECKPOINT_SCRIPT = `
repo=$1 work=$2 msg=$3 mode=$4 cap=$5
shift 5
g() { git ${IDENTITY.join(' ')} --git-dir="$repo" --work-tree="$work" "$@"; }
head() {
  IFS= read -r ref < "$repo/HEAD" || return 1
  case $ref in
    'ref: refs/'*) if [ -f "$repo/\${ref#ref: }" ] && IFS= read -r id < "$repo/\${ref#ref: }"; then echo "$id"; return; fi ;;
  esac
  g rev-parse --verify --quiet HEAD
}
empty() {
  for entry in "$work"/* "$work"/.[!.]* "$work"/..?*; do if [ -e "$entry" ] || [ -L "$entry" ]; then return 1; fi; done
}
if [ ! -f "$repo/HEAD" ]; then git --git-dir="$repo" init --quiet --bare --template= || exit 1; first=1
fi
if [ ! -f "$repo/info/attributes" ]; then mkdir -p "$repo/info" && printf '%s\\n' '${AS_THEY_ARE}' > "$repo/info/attributes" || exit 1; fi
if [ -n "\${first-}" ]; then :
elif [ "$mode" = baseline ] && head >/dev/null; then exit 0; fi
add() {
  mapfile -d '' big < <(find "$work" -type f -size +"$cap"c -printf '%P\\0' 2>/dev/null)
  if [ \${#big[@]} -eq 0 ]; then g add --all --force -- . "$@"; return; fi
  printf '%s\\0' "\${big[@]}" | g rm --cached --quiet --ignore-unmatch --pathspec-from-file=- --pathspec-file-nul >/dev/null || return 1
  for f in "\${big[@]}"; do printf 'left out: %s\\n' "\${f//$'\\n'/ }"; done
  { printf '%s\\0' . "$@"; for f in "\${big[@]}"; do printf ':(top,exclude,literal)%s\\0' "$f"; done; } | g add --all --force --pathspec-from-file=- --pathspec-file-nul
}
if [ -z "\${first-}" ] || ! empty; then add "$@" || exit 1; fi
if [ -n "\${first-}" ]; then g commit --quiet --allow-empty --no-verify -m "$msg" || exit 1
elif ! g commit --quiet --no-verify -m "$msg" >/dev/null; then
  if ! head >/dev/null; then g commit --quiet --allow-empty --no-verify -m "$msg" || exit 1
  elif ! g diff --cached --quiet; then echo 'git commit failed' >&2; exit 1; fi
fi
head || { echo 'the checkpoint has no HEAD' >&2; exit 1; }`;
const runner = scriptRunner(GIT_ENV);

/** The checkpoint repository of run `runId` under `root`. */
export function checkpointRepo(root: string, runId: string): string {
  return path.join(root, `${runId.replace(/[^A-Za-z0-9._-]/g, '_')}.git`);
}

function git(repo: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', [...IDENTITY, '--git-dir', repo, ...args], { env: GIT_ENV, timeout: GIT_TIMEOUT_MS }, (err, stdout, stderr) => {
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

/**
 * Repositories this process has seen with a commit: their baseline is taken,
 * so a call needs no git process before it. Bounded; a repository forgotten
 * or removed by hand is asked again.
 */
const committed = new Set<string>();
const COMMITTED_LIMIT = 10_000;

function remember(repo: string): void {
  committed.delete(repo);
  committed.add(repo);
  if (committed.size > COMMITTED_LIMIT) committed.delete(committed.values().next().value!);
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

/**
 * What a checkpoint of `workspace` leaves out: each of `hidden` (Tether's home, the checkpoint repositories) that
 * lies inside it, as git pathspecs. A fork writes a checkpoint's files into a workspace tools can read, so what
 * the sandbox hides from the tools must never be in one.
 */
function excluded(workspace: string, hidden: readonly string[]): string[] {
  return hidden
    .map((p) => path.relative(path.resolve(workspace), path.resolve(p)))
    .filter((rel) => rel && !rel.startsWith('..') && !path.isAbsolute(rel))
    .map((rel) => `:(top,exclude,literal)${rel}`);
}

/** A checkpoint: its commit (HEAD, or '' for a baseline already taken), and the files it left out for their size. */
export interface Checkpointed {
  commit: string;
  leftOut: string[];
}

/** Commits the workspace as it is (ignored files too: a checkpoint is the files, not a project's idea of its sources) but for `hidden` and files over the cap. */
async function checkpoint(repo: string, workspace: string, message: string, mode: 'baseline' | 'after', hidden: readonly string[]): Promise<Checkpointed> {
  if (await exists(path.join(repo, 'HEAD'))) await clearStaleLock(repo);
  else await mkdir(path.dirname(repo), { recursive: true });
  // git warns on stderr (an embedded repository, line endings) and the runner merges it into the output: HEAD is the last line.
  const { code, output } = await runner.run(
    CHECKPOINT_SCRIPT,
    [repo, workspace, message.replaceAll('\0', ' '), mode, String(CHECKPOINT_FILE_CAP_BYTES), ...excluded(workspace, hidden)],
    GIT_TIMEOUT_MS / 1000,
  );
  if (code !== 0) throw new Error(`checkpoint: ${output.trim() || `exit ${code}`}`);
  const lines = output.trim().split('\n');
  const head = lines.at(-1) ?? '';
  if (head && !/^[0-9a-f]{40,64}$/.test(head)) throw new Error(`checkpoint: git answered no commit id: ${output.trim().slice(-500)}`);
  remember(repo);
  return { commit: head, leftOut: lines.flatMap((line) => (line.startsWith('left out: ') ? [line.slice('left out: '.length)] : [])) };
}

/** Whether this process has seen `repo` with its baseline taken: a call that changes files then needs no baseline first. */
export async function baselineTaken(repo: string): Promise<boolean> {
  return committed.has(repo) && (await exists(path.join(repo, 'HEAD')));
}

/** Takes the baseline (the workspace before the run's first checkpointed call) when the repository is new; its commit, or null. */
export async function checkpointBaseline(repo: string, workspace: string, hidden: readonly string[] = []): Promise<string | null> {
  if (await baselineTaken(repo)) return null;
  return (await checkpoint(repo, workspace, 'baseline: the workspace before the first call', 'baseline', hidden)).commit || null;
}

/** Checkpoints the workspace after a call, leaving `hidden` out; returns the commit. */
export async function checkpointWorkspace(repo: string, workspace: string, label: string, hidden: readonly string[] = []): Promise<string> {
  return (await checkpointReporting(repo, workspace, label, hidden)).commit;
}

/** Checkpoints the workspace after a call, leaving `hidden` out; returns the commit and the files left out for their size. */
export function checkpointReporting(repo: string, workspace: string, label: string, hidden: readonly string[] = []): Promise<Checkpointed> {
  return checkpoint(repo, workspace, label, 'after', hidden);
}

/**
 * Writes the files of `commit` (from `source`'s repository) into `workspace`
 * and checkpoints the result in `target`'s, so the fork's own checkpoints go
 * on from there. Files already in the workspace and not in the commit stay.
 */
export async function restoreCheckpoint(source: string, commit: string, target: string, workspace: string, hidden: readonly string[] = []): Promise<string> {
  if (!(await exists(path.join(source, 'HEAD')))) throw new Error(`no checkpoint repository at ${source} on this worker`);
  await git(source, ['cat-file', '-e', `${commit}^{commit}`]).catch(() => {
    throw new Error(`checkpoint ${commit} is not in ${source}`);
  });
  await extract(source, commit, workspace);
  return checkpointWorkspace(target, workspace, `restored ${commit} from ${path.basename(source)}`, hidden);
}

/**
 * `git archive <commit> | tar -x`: files byte for byte, symlinks and the exec bit as committed, other modes by the
 * worker's umask (`tar.umask=user`; git's own default is 002). A repository made before its attributes file is
 * given one first (the only write to the source repository).
 */
async function extract(repo: string, commit: string, workspace: string): Promise<void> {
  const attributes = path.join(repo, 'info', 'attributes');
  if (!(await exists(attributes))) {
    await mkdir(path.dirname(attributes), { recursive: true });
    await writeFile(attributes, `${AS_THEY_ARE}\n`);
  }
  return new Promise((resolve, reject) => {
    const archive = spawn('git', [...IDENTITY, '-c', 'tar.umask=user', '--git-dir', repo, 'archive', '--format=tar', commit], {
      env: GIT_ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tar = spawn('tar', ['-x', '-f', '-', '-C', workspace], { env: GIT_ENV, stdio: ['pipe', 'ignore', 'pipe'] });
    let errors = '';
    archive.stderr.on('data', (d) => (errors += d));
    tar.stderr.on('data', (d) => (errors += d));
    archive.stdout.pipe(tar.stdin);
    const codes = [archive, tar].map((p) => new Promise<number | null>((done) => p.once('close', done)));
    Promise.all(codes).then(([a, t]) => (a === 0 && t === 0 ? resolve() : reject(new Error(`restore failed: ${errors.trim() || `exit ${a}/${t}`}`))), reject);
  });
}
