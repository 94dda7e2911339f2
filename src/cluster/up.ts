import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TetherError } from '../client/runs.js';
import { findTemporalCli } from '../server/temporal-cli.js';
import { temporalSettings } from '../api/settings.js';
import { type ClusterBinaries, ensureClusterBinaries } from './binaries.js';
import { stopRecorded } from './down.js';
import { type ClusterPorts, type DatabaseAccess, LOOPBACK, type NodePlan, RECOMMENDED_SHARDS } from './layout.js';
import { parseDuration } from '../api/duration.js';
import type { ResolvedToken } from '../ops/access-token.js';
import { clusterPanelToken, launchBalancer, launchPanel, launchSupervisor, launchUi, launchWorker, type TetherTarget } from './parts.js';
import type { RestartPolicy } from './restart-policy.js';
import { planCluster, type ResolvedPorts } from './plan.js';
import { DB_USER, ensureDataDir, findPostgres, type PostgresInstall, postmasterPid, startPostgres } from './postgres.js';
import { isRunning, processStartTime, type Spawned } from './processes.js';
import { type ClusterState, clusterDir, readState, removeState, writeState } from './state.js';
import { createSchema, initNamespace, startNode, waitForFrontend, waitForMembership } from './temporal.js';
import { withUpLock } from './up-lock.js';

/** What `tether cluster up` is asked for. */
export interface UpOptions extends ClusterPorts {
  dir?: string;
  /** History shards; only a new database takes it (the count is fixed for a database's life). */
  shards?: number;
  workers: number;
  /** `--shutdown-grace` of each worker. */
  workerGrace: string;
  /** This process stays attached and stops the cluster on a signal. */
  foreground?: boolean;
  /** Whether a part that stops is started again (by this process when in the foreground, else by a `tether cluster supervise`). */
  restart: RestartPolicy;
  log: (message: string) => void;
  /** Aborting stops the start-up and everything started so far. */
  signal?: AbortSignal;
}

export interface UpResult {
  dir: string;
  state: ClusterState;
  panelToken: string;
  seconds: number;
}

/** Everything the start-up steps share. */
interface Context {
  dir: string;
  logDir: string;
  opts: UpOptions;
  bin: ClusterBinaries;
  pg: PostgresInstall;
  cli: string;
  nodes: NodePlan[];
  ports: ResolvedPorts;
  target: TetherTarget;
  state: ClusterState;
  token: ResolvedToken;
}

/**
 * Starts the production shape on this machine: PostgreSQL, two Temporal
 * nodes forming one cluster behind a balancer, the UI, the workers and the
 * panel. Returns once every part serves. On any failure (or an abort) it
 * stops what it started, in reverse order, and throws; existing data is kept.
 */
export async function clusterUp(opts: UpOptions): Promise<UpResult> {
  const started = Date.now();
  const dir = clusterDir(opts.dir);
  await mkdir(dir, { recursive: true });
  return withUpLock(dir, async () => {
    await refuseRunning(dir);
    // Settings a part would refuse stop `up` here, before a database and two nodes start only to be stopped again.
    const token = await clusterPanelToken(dir).catch((err: Error) => {
      throw new TetherError(err.message, 'invalid');
    });
    checkGrace(opts.workerGrace);
    const shards = await decideShards(dir, opts.shards);
    const { nodes, ports } = await planCluster(opts, { nodes: 2, workers: opts.workers });
    const bin = await ensureClusterBinaries(opts.log);
    const pg = await findPostgres();
    const cli = await findTemporalCli({ log: opts.log });
    const settings = temporalSettings(process.env);
    const target = { address: `${LOOPBACK}:${ports.port}`, namespace: settings.namespace, taskQueue: settings.taskQueue };
    const state = emptyState(bin, pg, shards, opts, target.namespace);
    const ctx: Context = { dir, logDir: path.join(dir, 'logs'), opts, bin, pg, cli, nodes, ports, target, state, token };
    try {
      await startEverything(ctx);
      await leaveSupervisor(ctx);
      return { dir, state, panelToken: token.token, seconds: (Date.now() - started) / 1000 };
    } catch (err) {
      opts.log('Start-up failed; stopping what was started …');
      await stopRecorded(dir, state, opts.log);
      await removeState(dir);
      // A part that fails because Ctrl-C reached its process group failed of the interruption, and says so.
      throw opts.signal?.aborted ? opts.signal.reason : err;
    }
  });
}

/** The workers' `--shutdown-grace`, checked as `tether worker` will check it. */
function checkGrace(grace: string): void {
  try {
    parseDuration(grace);
  } catch (err) {
    throw new TetherError(`--worker-shutdown-grace: ${(err as Error).message}`, 'invalid');
  }
}

/** A second `up` on a running cluster, or on the remains of one, says so and starts nothing. */
async function refuseRunning(dir: string): Promise<void> {
  const state = await readState(dir);
  if (!state) return;
  const alive = [state.supervisor, ...state.nodes, state.balancer, state.ui, ...state.workers, state.panel].filter((p) => isRunning(p)).length;
  const postgres = state.postgres && postmasterPid(state.postgres.dataDir) ? 1 : 0;
  if (alive + postgres === 0) return;
  throw new TetherError(
    `a cluster is already running from ${dir} (${alive + postgres} of its processes are up): \`tether cluster status\` shows it, \`tether cluster down\` stops it`,
    'conflict',
  );
}

const shardsFile = (dir: string) => path.join(dir, 'shards');

/** The shard count: the database's own once it exists (it can never change), else the one asked for or recommended. */
async function decideShards(dir: string, asked: number | undefined): Promise<number> {
  const recorded = Number((await readFile(shardsFile(dir), 'utf8').catch(() => '')).trim()) || null;
  if (recorded && asked && asked !== recorded)
    throw new TetherError(
      `the database in ${dir} was created with ${recorded} history shards and a cluster cannot change its shard count: drop --shards, or use another --dir`,
      'invalid',
    );
  return recorded ?? asked ?? RECOMMENDED_SHARDS;
}

function emptyState(bin: ClusterBinaries, pg: PostgresInstall, shards: number, opts: UpOptions, namespace: string): ClusterState {
  return {
    version: 1,
    startedAt: new Date().toISOString(),
    supervisor: opts.foreground ? { pid: process.pid, startTime: processStartTime(process.pid) ?? '', restarts: 0 } : null,
    restart: opts.restart,
    namespace,
    workerGrace: opts.workerGrace,
    shards,
    versions: { server: bin.serverVersion, ui: bin.uiVersion, postgres: pg.version },
    postgres: null,
    nodes: [],
    balancer: null,
    ui: null,
    workers: [],
    panel: null,
  };
}

function track(proc: Spawned): { pid: number; startTime: string; restarts: number; log: string } {
  // A background `up` must be able to exit while they run on.
  proc.child.unref();
  return { pid: proc.pid, startTime: proc.startTime, restarts: 0, log: proc.log };
}

/** A background `up` that restarts parts leaves a `tether cluster supervise` behind to do it. */
async function leaveSupervisor(ctx: Context): Promise<void> {
  if (ctx.opts.foreground || ctx.opts.restart === 'no') return;
  const { pid, startTime } = track(await launchSupervisor(ctx.dir, ctx.logDir));
  ctx.state.supervisor = { pid, startTime, restarts: 0 };
  await writeState(ctx.dir, ctx.state);
}

async function startEverything(ctx: Context): Promise<void> {
  const { dir, opts, state } = ctx;
  const db = await startDatabase(ctx);
  opts.signal?.throwIfAborted();
  opts.log('Creating or upgrading the Temporal schema (deploy/temporal-schema.sh) …');
  await createSchema(ctx.bin, db, path.join(ctx.logDir, 'schema.log'));
  await startTemporal(ctx, db);
  const balancer = await launchBalancer(
    ctx.target.address,
    ctx.nodes.map((n) => n.frontend),
    ctx.logDir,
    opts.signal,
  );
  state.balancer = { ...track(balancer), address: ctx.target.address };
  await writeState(dir, state);
  await balancer.ready();
  opts.log(`Registering namespace ${ctx.target.namespace} and search attributes (deploy/temporal-init.sh) …`);
  await initNamespace(ctx.cli, ctx.target.address, ctx.target.namespace, path.join(ctx.logDir, 'init.log'));
  await startServices(ctx);
}

async function startDatabase(ctx: Context): Promise<DatabaseAccess> {
  const { dir, pg, ports, state } = ctx;
  const dataDir = path.join(dir, 'postgres');
  const password = await ensureDataDir(pg, dataDir, path.join(dir, 'postgres-password'));
  await writeFile(shardsFile(dir), `${state.shards}\n`);
  const log = path.join(ctx.logDir, 'postgres.log');
  ctx.opts.log(`Starting PostgreSQL ${pg.version} on ${LOOPBACK}:${ports.postgresPort} (data in ${dataDir}) …`);
  // Recorded only once started: a PostgreSQL that was already running on this data is not ours to stop.
  await startPostgres(pg, dataDir, ports.postgresPort, log);
  state.postgres = { port: ports.postgresPort, dataDir, binDir: pg.binDir, log, restarts: 0 };
  await writeState(dir, state);
  return { port: ports.postgresPort, user: DB_USER, password };
}

async function startTemporal(ctx: Context, db: DatabaseAccess): Promise<void> {
  const { dir, state, opts } = ctx;
  const frontends = ctx.nodes.map((n) => n.frontend).join(', ');
  opts.log(`Starting ${ctx.nodes.length} Temporal ${ctx.bin.serverVersion} nodes (${state.shards} history shards): ${frontends} …`);
  const since = new Date(Date.now() - 1_000);
  // One after the other: nodes starting together on a new database race to write its cluster metadata.
  for (const plan of ctx.nodes) {
    const proc = await startNode(ctx.bin, plan, db, { shards: state.shards, logDir: ctx.logDir });
    state.nodes.push({ ...track(proc), name: plan.name, frontend: plan.frontend, services: plan.services, ports: plan.ports });
    await writeState(dir, state);
    await waitForFrontend(plan, proc, opts.signal);
  }
  await waitForMembership(ctx.pg, db, ctx.nodes, since, opts.signal);
}

/** The UI, the workers and the panel, started together. */
async function startServices(ctx: Context): Promise<void> {
  const { dir, state, opts, ports, target } = ctx;
  opts.log(`Starting the Temporal UI, ${opts.workers} workers and the panel …`);
  const ui = await launchUi(ctx.bin, ports.uiPort, target, ctx.logDir, opts.signal);
  state.ui = { ...track(ui), url: ui.url };
  const workers = [];
  for (let n = 1; n <= opts.workers; n++) {
    const home = path.join(dir, 'workers', `worker-${n}`);
    const worker = await launchWorker(n, {
      target,
      metricsPort: ports.workerMetricsPorts[n - 1],
      home,
      grace: opts.workerGrace,
      logDir: ctx.logDir,
      signal: opts.signal,
    });
    state.workers.push({ ...track(worker), taskQueue: target.taskQueue, metricsUrl: worker.metricsUrl, home });
    workers.push(worker);
  }
  const panel = await launchPanel({ target, port: ports.panelPort, token: ctx.token.token, uiUrl: ui.url, logDir: ctx.logDir, signal: opts.signal });
  state.panel = { ...track(panel), url: panel.url, tokenFile: ctx.token.file ?? null };
  await writeState(dir, state);
  await Promise.all([ui.ready(), ...workers.map((w) => w.ready()), panel.ready()]);
}
