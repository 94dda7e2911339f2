import path from 'node:path';
import { findPostgres, type PostgresInstall, postmasterPid, stopPostgres } from './postgres.js';
import { isRunning, processesUnder, stopProcess, waitForExit } from './processes.js';
import { type ClusterState, clusterDir, readState, removeState } from './state.js';
import { killProcessGroup } from '../tools/process-tree.js';

/** How long each kind of process gets between SIGTERM and SIGKILL. */
const GRACE = { worker: 15_000, panel: 5_000, ui: 5_000, balancer: 3_000, node: 15_000, supervisor: 60_000 };

/**
 * Stops what `state` records, dependants first: panel, UI and workers (which
 * cancel their tools), anything their tools left behind, then the balancer
 * and the Temporal nodes, then PostgreSQL (a fast shutdown: nothing is lost).
 * Safe on a half-started or half-dead cluster: gone parts are skipped.
 */
export async function stopRecorded(dir: string, state: ClusterState, log: (m: string) => void): Promise<void> {
  await Promise.all([stopProcess(state.panel, GRACE.panel), stopProcess(state.ui, GRACE.ui), ...state.workers.map((w) => stopProcess(w, GRACE.worker))]);
  const leftovers = processesUnder(path.join(dir, 'workers'));
  if (leftovers.length) log(`Stopping ${leftovers.length} process(es) the workers' tools left behind …`);
  await Promise.all(leftovers.map((pid) => killProcessGroup(pid, 1_000)));
  await Promise.all([stopProcess(state.balancer, GRACE.balancer), ...state.nodes.map((n) => stopProcess(n, GRACE.node))]);
  if (state.postgres && postmasterPid(state.postgres.dataDir)) {
    const pg: PostgresInstall = { ...(await findPostgres()), binDir: state.postgres.binDir };
    await stopPostgres(pg, state.postgres.dataDir);
  }
}

/** What `down` did. */
export interface DownResult {
  dir: string;
  /** False when no cluster was recorded in the directory. */
  found: boolean;
}

/**
 * `tether cluster down`: stops exactly what `up` started in `dir` and forgets
 * it; data, logs and the built programs stay. A foreground `up` is asked to
 * stop first, as Ctrl-C would.
 */
export async function clusterDown(opts: { dir?: string; log: (m: string) => void }): Promise<DownResult> {
  const dir = clusterDir(opts.dir);
  const state = await readState(dir);
  if (!state) return { dir, found: false };
  if (state.supervisor && state.supervisor.pid !== process.pid && isRunning(state.supervisor)) {
    opts.log(`Asking the foreground \`tether cluster up\` (pid ${state.supervisor.pid}) to stop …`);
    process.kill(state.supervisor.pid, 'SIGTERM');
    await waitForExit(state.supervisor, GRACE.supervisor);
  }
  await stopRecorded(dir, state, opts.log);
  await removeState(dir);
  return { dir, found: true };
}
