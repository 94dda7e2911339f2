import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { isProcessAlive } from '../tools/process-tree.js';
import { LOOPBACK } from './layout.js';
import { logTail } from './processes.js';

const run = promisify(execFile);

/** The database user Temporal connects as; it owns the cluster's PostgreSQL instance. */
export const DB_USER = 'temporal';

/** Where PostgreSQL's programs are, and which user runs them. */
export interface PostgresInstall {
  binDir: string;
  version: string;
  /** Set when this process is root: PostgreSQL refuses to run as root, so it runs as the `postgres` user. */
  runAs?: { uid: number; gid: number; name: string };
}

/** A PostgreSQL problem with what to do about it; nothing was damaged. */
export class PostgresError extends Error {
  override name = 'PostgresError';
}

function candidateBinDirs(): string[] {
  const dirs = process.env.TETHER_POSTGRES_BIN ? [process.env.TETHER_POSTGRES_BIN] : [];
  // A pg_ctl on PATH may be a lone symlink: its real directory has psql and the rest.
  for (const dir of (process.env.PATH ?? '').split(path.delimiter))
    if (dir && existsSync(path.join(dir, 'pg_ctl'))) dirs.push(path.dirname(realpathSync(path.join(dir, 'pg_ctl'))));
  // Debian keeps the server programs off PATH, one directory per major version: newest first.
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const majors = readdirSync(debian).sort((a, b) => Number(b) - Number(a));
    dirs.push(...majors.map((major) => path.join(debian, major, 'bin')));
  }
  return dirs.filter((dir) => existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl')));
}

function postgresUser(): { uid: number; gid: number; name: string } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) return undefined;
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid), name: 'postgres' };
}

/** Finds initdb and pg_ctl ($TETHER_POSTGRES_BIN, PATH, /usr/lib/postgresql/<major>/bin). */
export async function findPostgres(): Promise<PostgresInstall> {
  const [binDir] = candidateBinDirs();
  if (!binDir)
    throw new PostgresError(
      'PostgreSQL is not installed (no initdb/pg_ctl in $TETHER_POSTGRES_BIN, on PATH or in /usr/lib/postgresql/*/bin): run `bash scripts/ensure-cluster.sh` (it runs apt-get install postgresql) or install it yourself',
    );
  const { stdout } = await run(path.join(binDir, 'postgres'), ['--version']);
  const version = /(\d+(\.\d+)?)/.exec(stdout)?.[1] ?? stdout.trim();
  if (process.getuid?.() !== 0) return { binDir, version };
  const runAs = postgresUser();
  if (!runAs)
    throw new PostgresError(
      'PostgreSQL refuses to run as root and there is no `postgres` user here: create one (useradd --system postgres) or run as another user',
    );
  return { binDir, version, runAs };
}

function pgOptions(pg: PostgresInstall) {
  return pg.runAs ? { uid: pg.runAs.uid, gid: pg.runAs.gid } : {};
}

/** Makes `target` belong to the user PostgreSQL runs as. */
async function handOver(pg: PostgresInstall, target: string): Promise<void> {
  if (pg.runAs) await chown(target, pg.runAs.uid, pg.runAs.gid);
}

/** The PostgreSQL user must reach its directory: every directory above it searchable. */
function checkReachable(pg: PostgresInstall, dir: string): void {
  if (!pg.runAs) return;
  const probe = spawnSync('/bin/sh', ['-c', 'test -x "$0"', dir], pgOptions(pg));
  if (probe.status !== 0)
    throw new PostgresError(
      `the ${pg.runAs.name} user cannot reach ${dir}: every directory above it must be searchable by others (chmod o+x …), or use another --dir`,
    );
}

/**
 * A data directory for the cluster: an existing one is reused as it is; a
 * missing or empty one is created with initdb (database user `temporal`,
 * password auth). Anything else is refused before it is touched.
 */
export async function ensureDataDir(pg: PostgresInstall, dataDir: string, passwordFile: string): Promise<string> {
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const password = await readFile(passwordFile, 'utf8').catch(() => null);
    if (password === null)
      throw new PostgresError(
        `${dataDir} holds a database but its password file ${passwordFile} is gone: restore it, or move the data directory away to start afresh`,
      );
    return password.trim();
  }
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0)
    throw new PostgresError(`${dataDir} exists and is not a PostgreSQL data directory (no PG_VERSION): move it away; it was left untouched`);
  return initDataDir(pg, dataDir, passwordFile);
}

async function initDataDir(pg: PostgresInstall, dataDir: string, passwordFile: string): Promise<string> {
  const password = randomBytes(18).toString('base64url');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await handOver(pg, dataDir);
  checkReachable(pg, dataDir);
  const pwfile = path.join(path.dirname(dataDir), `.initdb-${process.pid}`);
  await writeFile(pwfile, password, { mode: 0o600 });
  await handOver(pg, pwfile);
  try {
    await run(path.join(pg.binDir, 'initdb'), ['-D', dataDir, '-U', DB_USER, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-instructions'], {
      ...pgOptions(pg),
      env: { PATH: process.env.PATH, LANG: 'C.UTF-8' },
    });
  } catch (err) {
    // The directory was empty or absent before: removing what initdb left loses nothing.
    await rm(dataDir, { recursive: true, force: true });
    throw new PostgresError(`initdb failed: ${((err as { stderr?: string }).stderr || (err as Error).message).trim()}`);
  } finally {
    await rm(pwfile, { force: true });
  }
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  return password;
}

/** The running postmaster's pid from `postmaster.pid`, or null. */
export function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return pid > 0 && isProcessAlive(pid) ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Starts PostgreSQL on 127.0.0.1:`port` only (socket inside the data
 * directory) with pg_ctl, which waits until it accepts connections. Settings
 * go on the command line, so the data directory's own files are never edited.
 */
export async function startPostgres(pg: PostgresInstall, dataDir: string, port: number, log: string): Promise<number> {
  const running = postmasterPid(dataDir);
  if (running) throw new PostgresError(`a PostgreSQL server (pid ${running}) already runs on ${dataDir}: stop it first; it was left alone`);
  checkReachable(pg, path.dirname(dataDir));
  await mkdir(path.dirname(log), { recursive: true });
  await writeFile(log, '', { flag: 'a', mode: 0o600 });
  await handOver(pg, log);
  const options = `-c listen_addresses=${LOOPBACK} -c port=${port} -c unix_socket_directories=${dataDir} -c max_connections=200`;
  try {
    await run(path.join(pg.binDir, 'pg_ctl'), ['-D', dataDir, '-l', log, '-w', '-t', '60', '-o', options, 'start'], {
      ...pgOptions(pg),
      env: { PATH: process.env.PATH },
    });
  } catch (err) {
    // pg_ctl gave up but a postmaster it started may still be coming up: it is ours to stop.
    if (postmasterPid(dataDir)) await stopPostgres(pg, dataDir);
    const said = `${(err as { stderr?: string }).stderr ?? ''}${await logTail(log)}`.trim();
    throw new PostgresError(`PostgreSQL did not start on ${LOOPBACK}:${port} (data in ${dataDir}, left as it was; its log is ${log}):\n${said}`);
  }
  const pid = postmasterPid(dataDir);
  if (!pid) throw new PostgresError(`PostgreSQL started but left no postmaster.pid in ${dataDir}`);
  return pid;
}

/** A fast shutdown (sessions end, nothing is lost); an immediate one if that hangs. */
export async function stopPostgres(pg: PostgresInstall, dataDir: string): Promise<void> {
  if (!postmasterPid(dataDir)) return;
  const pgCtl = path.join(pg.binDir, 'pg_ctl');
  const opts = { ...pgOptions(pg), env: { PATH: process.env.PATH } };
  try {
    await run(pgCtl, ['-D', dataDir, '-m', 'fast', '-w', '-t', '30', 'stop'], opts);
  } catch {
    await run(pgCtl, ['-D', dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop'], opts).catch(() => undefined);
  }
}

/** Runs one SQL statement with psql and returns its rows as arrays of fields. */
export async function psql(pg: PostgresInstall, port: number, password: string, db: string, sql: string): Promise<string[][]> {
  const { stdout } = await run(path.join(pg.binDir, 'psql'), ['-h', LOOPBACK, '-p', String(port), '-U', DB_USER, '-d', db, '-At', '-F', '\t', '-c', sql], {
    env: { PATH: process.env.PATH, PGPASSWORD: password, PGCONNECT_TIMEOUT: '5' },
    timeout: 15_000,
  });
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t'));
}
