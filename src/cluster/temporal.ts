import { execFile } from 'node:child_process';
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureSearchAttributes } from '../server/search-attributes.js';
import { PROJECT_ROOT } from '../api/home.js';
import type { ClusterBinaries } from './binaries.js';
import { type DatabaseAccess, LOOPBACK, type NodePlan, nodeEnvironment } from './layout.js';
import { type PostgresInstall, psql } from './postgres.js';
import { logTail, type Spawned, spawnDetached } from './processes.js';
import { frontendAnswers, StartError, waitUntil } from './readiness.js';

const run = promisify(execFile);

/** deploy/: the one source of the cluster's configuration, shared with docker-compose.yml. */
export const DEPLOY_DIR = path.join(PROJECT_ROOT, 'deploy');
export const SERVER_CONFIG = path.join(DEPLOY_DIR, 'temporal', 'server.yaml');
export const DYNAMIC_CONFIG = path.join(DEPLOY_DIR, 'dynamicconfig', 'tether.yaml');

/** What the Temporal server needs from a process environment besides its config. */
function baseEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/', TZ: 'UTC' };
}

/** Runs one of deploy/'s scripts, its output appended to `log`; a failure quotes the output. */
async function runDeployScript(script: string, env: Record<string, string>, log: string): Promise<void> {
  try {
    const { stdout, stderr } = await run('/bin/sh', [path.join(DEPLOY_DIR, script)], {
      env: { ...baseEnv(), ...env },
      timeout: 180_000,
      maxBuffer: 32 * 1024 * 1024,
    });
    await appendFile(log, stdout + stderr, { mode: 0o600 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    await appendFile(log, (e.stdout ?? '') + (e.stderr ?? e.message), { mode: 0o600 });
    throw new StartError(`deploy/${script} failed. Its output (${log}) ends:\n${await logTail(log)}`);
  }
}

/** Creates or upgrades Temporal's databases exactly as docker-compose.yml's schema job does. */
export async function createSchema(bin: ClusterBinaries, db: DatabaseAccess, log: string): Promise<void> {
  await runDeployScript(
    'temporal-schema.sh',
    {
      TEMPORAL_SQL_TOOL: bin.sqlTool,
      TEMPORAL_SCHEMA_DIR: bin.schemaDir,
      POSTGRES_SEEDS: LOOPBACK,
      DB_PORT: String(db.port),
      POSTGRES_USER: db.user,
      SQL_PASSWORD: db.password,
    },
    log,
  );
}

/** Starts one node: every Temporal service in one process, configured by deploy/temporal/server.yaml. */
export function startNode(bin: ClusterBinaries, node: NodePlan, db: DatabaseAccess, opts: { shards: number; logDir: string }): Promise<Spawned> {
  const env = { ...baseEnv(), ...nodeEnvironment(node, db, { shards: opts.shards, dynamicConfig: DYNAMIC_CONFIG }) };
  // Its working directory is the cluster's, so what runs there is plainly the cluster's.
  return spawnDetached(bin.server, ['--config-file', SERVER_CONFIG, '--allow-no-auth', 'start'], {
    env,
    log: path.join(opts.logDir, `${node.name}.log`),
    cwd: path.dirname(opts.logDir),
  });
}

// cluster_membership.role: which ringpop ring a row belongs to.
const ROLE_PORT: Record<number, keyof NodePlan['ports']> = { 1: 'frontendMembership', 2: 'historyMembership', 3: 'matchingMembership', 4: 'workerMembership' };

/**
 * True when every service of every node has joined the cluster since `since`:
 * the membership table (how ringpop nodes find each other on SQL) has a row
 * for each, so the two processes form one cluster, not two.
 */
export async function clusterFormed(pg: PostgresInstall, db: DatabaseAccess, nodes: NodePlan[], since: Date): Promise<boolean> {
  const rows = await psql(
    pg,
    db.port,
    db.password,
    'temporal',
    `SELECT role, rpc_port FROM cluster_membership WHERE session_start >= '${since.toISOString().replace('T', ' ').replace('Z', '')}'`,
  );
  const joined = new Set(rows.map(([role, port]) => `${role}:${port}`));
  return nodes.every((node) => Object.entries(ROLE_PORT).every(([role, key]) => joined.has(`${role}:${node.ports[key]}`)));
}

/** Waits until a node's frontend answers. */
export function waitForFrontend(plan: NodePlan, proc: Spawned, signal?: AbortSignal): Promise<void> {
  return waitUntil(`Temporal ${plan.name} (${plan.frontend})`, () => frontendAnswers(plan.frontend), { timeoutMs: 120_000, proc, signal });
}

/** Waits until the nodes have formed one cluster. */
export function waitForMembership(pg: PostgresInstall, db: DatabaseAccess, nodes: NodePlan[], since: Date, signal?: AbortSignal): Promise<void> {
  return waitUntil('cluster membership (every node in every service ring)', () => clusterFormed(pg, db, nodes, since), { timeoutMs: 60_000, signal });
}

/** Registers the namespace and search attributes as docker-compose.yml's init job does, then checks them. */
export async function initNamespace(cli: string, address: string, namespace: string, log: string): Promise<void> {
  await runDeployScript(
    'temporal-init.sh',
    { PATH: `${path.dirname(cli)}${path.delimiter}${baseEnv().PATH}`, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace },
    log,
  );
  const added = await ensureSearchAttributes(address, namespace);
  if (added.length) await appendFile(log, `search attributes deploy/temporal-init.sh does not know were added: ${added.join(', ')}\n`);
}
