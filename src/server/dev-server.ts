import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from '@temporalio/client';
import { connectTemporal } from './temporal-connection.js';
import { freePort } from './free-port.js';
import { ensureSearchAttributes, searchAttributeFlags } from './search-attributes.js';
import { tetherHome } from '../api/home.js';
import { findTemporalCli } from './temporal-cli.js';
import { listensOn } from './port-owner.js';
import { engineFlags } from './engine-tuning.js';
import { claimState, releaseState, stateHolder } from './state-claim.js';

export interface DevServerOptions {
  /** Aborted: nothing is started, or what started is stopped again, and the start throws the reason. */
  signal?: AbortSignal;
  /** Frontend gRPC port (default 7233). */
  port?: number;
  /** Web UI port (default 8233); ignored when headless. */
  uiPort?: number;
  /** The server's HTTP API port (default: a free one). */
  httpPort?: number;
  /** The server's Prometheus /metrics port (default: a free one). */
  metricsPort?: number;
  /** SQLite file (default `<TETHER_HOME>/temporal.db`); `null` for a throwaway in-memory server. */
  db?: string | null;
  /** Address the frontend and UI bind to (default 127.0.0.1). */
  ip?: string;
  /** No Web UI. */
  headless?: boolean;
  /** Namespace to create besides `default` (default `default`). */
  namespace?: string;
  /** Remote codec endpoint for the UI (`tether codec-server`). */
  codecEndpoint?: string;
  log?: (message: string) => void;
  /** Where the server's own output goes (default 'pipe': kept for error messages only). */
  stdio?: 'inherit' | 'pipe' | 'ignore';
  /** How long to wait for the frontend to answer (default 60 s). */
  startTimeoutMs?: number;
  /** A CLI to use instead of {@link findTemporalCli}. */
  cli?: string;
  /** More `temporal server start-dev` flags (e.g. `--dynamic-config-value k=v`); a key given here wins over the tuned value. */
  extraArgs?: string[];
  /** Start with {@link engineFlags} (default true); false runs stock Temporal limits, for the bench's comparison. */
  tuned?: boolean;
}

export interface DevServer {
  /** `host:port` of the frontend, for TEMPORAL_ADDRESS. */
  address: string;
  uiUrl: string | null;
  /** The server's HTTP API port and its Prometheus /metrics URL. */
  httpPort: number;
  metricsUrl: string;
  pid: number;
  /** The `temporal` binary that runs it. */
  cli: string;
  /** The SQLite file, or null for an in-memory server. */
  db: string | null;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process is gone. */
  stop(): Promise<void>;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** How the process ended, for people ("exit code 1", "signal SIGKILL"); null while it runs. */
  exitStatus(): string | null;
}

/** Whether nothing listens on ip:port (a listen that would succeed). */
export function portFree(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.unref();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host: ip, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

function portInUse(port: number, ip: string, what = 'port'): Error {
  return new Error(
    what === 'port'
      ? `port ${port} is in use — is a Temporal server already running? Use it (TEMPORAL_ADDRESS=${ip}:${port}) or pick another --port`
      : `UI port ${port} is in use — pick another --ui-port (or run headless)`,
  );
}

/** The `temporal server start-dev` arguments for `opts`. */
async function devServerArgs(
  opts: DevServerOptions,
  where: { ip: string; port: number; uiPort: number; httpPort: number; metricsPort: number; namespace: string; db: string | null },
): Promise<string[]> {
  const { ip, port, uiPort, httpPort, metricsPort, namespace, db } = where;
  return [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(port),
    '--http-port',
    String(httpPort),
    '--metrics-port',
    String(metricsPort),
    '--namespace',
    namespace,
    '--log-level',
    'warn',
    ...(db ? ['--db-filename', db] : []),
    ...(opts.headless ? ['--headless'] : ['--ui-port', String(uiPort)]),
    ...(opts.codecEndpoint && !opts.headless ? ['--ui-codec-endpoint', opts.codecEndpoint] : []),
    ...searchAttributeFlags(),
    ...(opts.tuned === false ? [] : engineFlags({ db, extraArgs: opts.extraArgs })),
    ...(opts.extraArgs ?? []),
  ];
}

/** The server process: its last output (always kept, so a failed start can quote it), its exit, and a stop that escalates to SIGKILL. */
interface ServerProcess {
  pid: number;
  tail(): string;
  /** Set once the process is gone: its spawn error if it never ran, else how it ended. */
  gone(): { spawnError?: Error; status?: string } | null;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * util-linux's `setpriv`, where there is one: run through it with `--pdeathsig TERM`, the server is told to stop
 * when this process dies, even by SIGKILL, rather than live on holding the ports and the state (it execs the
 * server, so the pid is the server's).
 */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

function spawnServer(cli: string, args: string[], stdio: NonNullable<DevServerOptions['stdio']>): ServerProcess {
  // A process group of its own: a terminal's Ctrl-C reaches only Tether, which stops the worker first and the
  // server last. Sharing the group, the server died first and the worker retried its last calls for 15 s.
  // Only for a server that is there: a missing one is then the spawn error it names, not setpriv's exit.
  const watched = SETPRIV && path.isAbsolute(cli) && existsSync(cli);
  const [command, ...rest] = watched ? [SETPRIV, '--pdeathsig', 'TERM', cli, ...args] : [cli, ...args];
  const child = spawn(command!, rest, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let tail = '';
  // Echoed to stderr, both: stdout carries the verb's own output (one JSON object with --output json).
  const keep = (d: Buffer) => {
    tail = (tail + d.toString()).slice(-4_000);
    if (stdio === 'inherit') process.stderr.write(d);
  };
  child.stderr!.on('data', keep);
  child.stdout!.on('data', keep);
  let gone: { spawnError?: Error; status?: string } | null = null;
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', (spawnError) => {
      gone = { spawnError };
      resolve(null);
    });
    child.once('exit', (code, signal) => {
      gone = { status: signal ? `signal ${signal}` : `exit code ${code}` };
      resolve(code);
    });
  });
  // Do not leave an orphan server behind if this process exits without stop().
  const onExit = () => child.kill('SIGTERM');
  process.once('exit', onExit);
  void exited.then(() => process.removeListener('exit', onExit));
  const stop = async (): Promise<void> => {
    if (gone) return;
    child.kill('SIGTERM');
    // Unref'd: once the server is gone, a pending timer must not hold the process for five seconds.
    const done = await Promise.race([exited.then(() => true), sleep(5_000, undefined, { ref: false }).then(() => false)]);
    if (!done) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  return { pid: child.pid!, tail: () => tail, gone: () => gone, exited, stop };
}

/** Why the server went away during start-up, as the error a person can act on. */
function startFailure(server: ServerProcess, cli: string, args: string[], ip: string, ports: { port: number; uiPort: number | null }): Error {
  const spawnError = server.gone()?.spawnError;
  if (spawnError) return new Error(`could not run ${cli}: ${spawnError.message}`);
  const tail = server.tail();
  if (/address already in use/i.test(tail)) {
    const busy = Number(/port (\d+)/.exec(tail)?.[1]);
    return busy === ports.uiPort && busy !== ports.port ? portInUse(busy, ip, 'ui') : portInUse(ports.port, ip);
  }
  return new Error(`the Temporal dev server (${cli} ${args.join(' ')}) exited during start-up; its last output:\n${tail.trim()}`);
}

/**
 * Resolves once the frontend answers DescribeNamespace from our server; throws when the server exits first or the
 * deadline passes. An answer from a server some other process bound the port with is not ours: ours then exits
 * with the port in use, and that is the error.
 */
async function untilAnswering(server: ServerProcess, address: string, namespace: string, timeoutMs: number, failure: () => Error): Promise<void> {
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (server.gone()) throw failure();
    if (await answersFromOwnPort(server.pid, address, port, namespace)) return;
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`the Temporal dev server did not answer on ${address} within ${timeoutMs / 1000} s; its last output:\n${server.tail().trim()}`);
    }
    await sleep(150);
  }
}

/** Whether `namespace` is described at `address` and the process `pid` holds the port (where the system can say). */
async function answersFromOwnPort(pid: number, address: string, port: number, namespace: string): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await connectTemporal({ address, connectTimeout: 1_000 });
    await connection.workflowService.describeNamespace({ namespace });
    return (await listensOn(pid, port)) !== false;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => {});
  }
}

/** A host to reach a server bound to `ip` at: a wildcard bind is reached at localhost. */
const hostOf = (ip: string) => (ip === '0.0.0.0' || ip === '::' ? 'localhost' : ip);

/** Refuses the state in `db` when another Temporal server holds it: the error names that server and what to do. */
async function refuseHeldState(db: string): Promise<void> {
  const holder = await stateHolder(db);
  if (holder) {
    throw new Error(
      `the Temporal state in ${db} is in use by another Temporal server (pid ${holder.pid}, at ${holder.address}): use that one (TEMPORAL_ADDRESS=${holder.address}), stop it (kill ${holder.pid}), or give this one its own state (another TETHER_HOME; tether server also takes --db <file>)`,
    );
  }
}

/** Throws when the frontend's port, or the UI's unless headless, is taken. */
async function claimPorts(ip: string, port: number, uiPort: number, headless: boolean | undefined): Promise<void> {
  if (!(await portFree(ip, port))) throw portInUse(port, ip);
  if (!headless && !(await portFree(ip, uiPort))) throw portInUse(uiPort, ip, 'ui');
}

/** The started server as its callers hold it. */
function devServerHandle(
  server: ServerProcess,
  where: { address: string; ip: string; uiPort: number; httpPort: number; metricsPort: number; cli: string; db: string | null; headless: boolean | undefined },
): DevServer {
  const { address, ip, uiPort, httpPort, metricsPort, cli, db, headless } = where;
  return {
    address,
    uiUrl: headless ? null : `http://${hostOf(ip)}:${uiPort}`,
    httpPort,
    metricsUrl: `http://${hostOf(ip)}:${metricsPort}/metrics`,
    pid: server.pid,
    cli,
    db,
    exited: server.exited,
    exitStatus: () => {
      const gone = server.gone();
      return gone && (gone.status ?? `failed to start: ${gone.spawnError?.message}`);
    },
    stop: server.stop,
  };
}

/**
 * Runs `temporal server start-dev` (SQLite state, the Web UI unless headless,
 * Tether's search attributes) and resolves once the frontend answers
 * DescribeNamespace. Search attributes missing from a reused database are added.
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const log = opts.log ?? (() => {});
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  const namespace = opts.namespace ?? 'default';
  const db = opts.db === undefined ? path.join(tetherHome(), 'temporal.db') : opts.db === null ? null : path.resolve(opts.db);
  if (db) await mkdir(path.dirname(db), { recursive: true });
  // Asked first: a server left running on this state (its Tether was SIGKILLed) also holds the port, and this names it.
  if (db) await refuseHeldState(db);
  await claimPorts(ip, port, uiPort, opts.headless);
  const cli = opts.cli ?? (await findTemporalCli({ log }));
  // Again: finding the CLI may have waited seconds on another process installing it, which may have bound them since.
  await claimPorts(ip, port, uiPort, opts.headless);
  // A Ctrl-C while the CLI was found (or installed) means: start nothing.
  opts.signal?.throwIfAborted();
  const httpPort = opts.httpPort || (await freePort());
  const metricsPort = opts.metricsPort || (await freePort());
  const args = await devServerArgs(opts, { ip, port, uiPort, httpPort, metricsPort, namespace, db });
  log(`Starting the Temporal dev server on ${ip}:${port}${db ? ` (state in ${db})` : ' (in memory)'} …`);
  const started = Date.now();
  const server = spawnServer(cli, args, opts.stdio ?? 'pipe');
  const address = `${ip}:${port}`;
  if (db) {
    await claimState(db, { pid: server.pid, address });
    void server.exited.then(() => releaseState(db, server.pid));
  }
  const failure = () => startFailure(server, cli, args, ip, { port, uiPort: opts.headless ? null : uiPort });
  await untilAnswering(server, address, namespace, opts.startTimeoutMs ?? 60_000, failure);
  try {
    await ensureSearchAttributes(address, namespace);
  } catch (err) {
    await server.stop();
    throw err;
  }
  if (opts.signal?.aborted) {
    await server.stop();
    throw opts.signal.reason;
  }
  log(`Temporal dev server ready at ${address} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return devServerHandle(server, { address, ip, uiPort, httpPort, metricsPort, cli, db, headless: opts.headless });
}
