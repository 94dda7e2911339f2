import path from 'node:path';
import { findPostgres, type PostgresInstall, postmasterPid, stopPostgres } from './postgres.js';
import { isRunning, processesUnder, stopProcess, waitForExit } from './processes.js';
import { type ClusterState, clusterDir, readState, removeState } from './state.js';
import { killProcessGroup } from '../tools/process-tree.js';

/** How long each kind of process gets between SIGTERM and SIGKILL. */
const GRACE = { worker: 15_000, panel: 5_000, ui: 5_000, balancer: 3_000, node: 15_000, supervisor: 60_000 };

/**
 * Stops what `state` records, dependants first: the supervisor, then the
 * panel, UI and workers (which cancel their tools), anything their tools
 * left behind, then the balancer
 * and the Temporal nodes, then PostgreSQL (a fast shutdown: nothing is lost).
 * Safe on a half-started or half-dead cluster: gone parts are skipped.
 */
export async function stopRecorded(dir: string, state: ClusterState, log: (m: string) => void): Promise<void> {
  // A supervisor left running would start again what is stopped below.
  if (state.supervisor?.pid !== process.pid) await stopProcess(state.supervisor, GRACE.balancer);
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
 * it; data, logs and the built programs stay. The supervisor stops first, so
 * it starts nothing again; a foreground `up` stops the cluster itself, as on
 * Ctrl-C.
 */
export async function clusterDown(opts: { dir?: string; log: (m: string) => void }): Promise<DownResult> {
  const dir = clusterDir(opts.dir);
  const recorded = await readState(dir);
  if (!recorded) return { dir, found: false };
  const supervisor = recorded.supervisor;
  if (supervisor && supervisor.pid !== process.pid && isRunning(supervisor)) {
    opts.log(`Stopping the cluster's supervisor (pid ${supervisor.pid}) first, so that it starts nothing again …`);
    process.kill(supervisor.pid, 'SIGTERM');
    if (!(await waitForExit(supervisor, GRACE.supervisor))) await stopProcess(supervisor, 0);
  }
  // Read again: the supervisor may have started parts again, or (a foreground `up`) stopped them all.
  const state = await readState(dir);
  if (state) await stopRecorded(dir, state, opts.log);
  await removeState(dir);
  return { dir, found: true };
}
