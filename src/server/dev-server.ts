import { execFile, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { freePort } from './free-port.js';
import { SEARCH_ATTRIBUTES, searchAttributeFlags } from './search-attributes.js';
import { findTemporalCli, tetherHome } from './temporal-cli.js';

const run = promisify(execFile);

export interface DevServerOptions {
  port?: number;
  uiPort?: number;
  /** SQLite file; `null` for a throwaway in-memory server. */
  db?: string | null;
  ip?: string;
  headless?: boolean;
  namespace?: string;
  codecEndpoint?: string;
  log?: (message: string) => void;
  stdio?: 'inherit' | 'pipe' | 'ignore';
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  pid: number;
  cli: string;
  stop(): Promise<void>;
  exited: Promise<number | null>;
}

async function portFree(ip: string, port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, ip, () => probe.close(() => resolve(true)));
  });
}

/**
 * Runs `temporal server start-dev` with persistent SQLite state, the Web UI
 * and Tether's search attributes, and resolves once the frontend answers.
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const log = opts.log ?? (() => {});
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  const namespace = opts.namespace ?? 'default';
  if (!(await portFree(ip, port))) throw new Error(`port ${port} is in use — is a Temporal server already running? Use it (TEMPORAL_ADDRESS=${ip}:${port}) or pick another --port`);
  if (!opts.headless && !(await portFree(ip, uiPort))) throw new Error(`UI port ${uiPort} is in use; pick another --ui-port (or --headless)`);
  const cli = await findTemporalCli({ log });
  const db = opts.db === undefined ? path.join(tetherHome(), 'temporal.db') : opts.db;
  if (db) await mkdir(path.dirname(path.resolve(db)), { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(port),
    '--http-port',
    String(await freePort()),
    '--namespace',
    namespace,
    '--log-level',
    'warn',
    ...(db ? ['--db-filename', path.resolve(db)] : []),
    ...(opts.headless ? ['--headless'] : ['--ui-port', String(uiPort)]),
    ...(opts.codecEndpoint ? ['--ui-codec-endpoint', opts.codecEndpoint] : []),
    ...searchAttributeFlags(),
    '--dynamic-config-value',
    'frontend.enableUpdateWorkflowExecution=true',
  ];
  const stdio = opts.stdio ?? 'pipe';
  const child = spawn(cli, args, { stdio: ['ignore', stdio, stdio] });
  let stderrTail = '';
  child.stderr?.on('data', (d: Buffer) => (stderrTail = (stderrTail + d.toString()).slice(-4_000)));
  child.stdout?.on('data', () => {});
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  const address = `${ip}:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (gone) throw new Error(`the Temporal dev server exited during start-up:\n${stderrTail}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      await connection.workflowService.describeNamespace({ namespace });
      await connection.close();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the Temporal dev server did not answer on ${address} within 60 s:\n${stderrTail}`);
      }
      await sleep(200);
    }
  }
  await ensureSearchAttributes(cli, address, namespace);
  log(`Temporal dev server running at ${address}${db ? ` (state in ${db})` : ''}`);
  return {
    address,
    uiUrl: opts.headless ? null : `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${uiPort}`,
    pid: child.pid!,
    cli,
    exited,
    async stop() {
      if (gone) return;
      child.kill('SIGTERM');
      const killed = await Promise.race([exited.then(() => true), sleep(5_000).then(() => false)]);
      if (!killed) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** Adds any of Tether's search attributes a reused database lacks. */
export async function ensureSearchAttributes(cli: string, address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    for (const { key, cliType } of SEARCH_ATTRIBUTES) {
      if (customAttributes && key.name in customAttributes) continue;
      await run(cli, ['operator', 'search-attribute', 'create', '--address', address, '--namespace', namespace, '--name', key.name, '--type', cliType], { timeout: 30_000 }).catch((err) => {
        if (!/already exists/i.test(String(err))) throw err;
      });
    }
  } finally {
    await connection.close();
  }
}
