import { postmasterPid } from './postgres.js';
import { isRunning } from './processes.js';
import { type ClusterState, clusterDir, readState } from './state.js';

/**
 * `tether cluster status --output json`: the contract's fields (frontends,
 * nodes, postgres, workers, ui, panel) plus where the cluster lives and
 * whether each part still runs.
 */
export interface ClusterStatus {
  dir: string;
  /** Every recorded part runs. */
  running: boolean;
  /** The balanced frontend address: what TEMPORAL_ADDRESS should say. */
  address: string | null;
  frontends: string[];
  nodes: Array<{ name: string; pid: number; frontend: string; services: string[]; running: boolean }>;
  postgres: { pid: number | null; port: number; dataDir: string; running: boolean } | null;
  workers: Array<{ pid: number; taskQueue: string; metricsUrl: string; running: boolean }>;
  ui: { pid: number; url: string; running: boolean } | null;
  /** `tokenFile`: null when the token is the TETHER_PANEL_TOKEN `up` was given. */
  panel: { pid: number; url: string; tokenFile: string | null; running: boolean } | null;
  balancer: { pid: number; address: string; running: boolean } | null;
  shards: number;
  versions: ClusterState['versions'];
  startedAt: string;
}

/** The status of what `state` records, checked against the processes that run now. */
export function describeState(dir: string, state: ClusterState): ClusterStatus {
  // PostgreSQL may have been restarted by hand: its data directory says which postmaster is current.
  const pgPid = state.postgres ? postmasterPid(state.postgres.dataDir) : null;
  const status: ClusterStatus = {
    dir,
    running: false,
    address: state.balancer?.address ?? null,
    frontends: state.nodes.map((n) => n.frontend),
    nodes: state.nodes.map((n) => ({ name: n.name, pid: n.pid, frontend: n.frontend, services: n.services, running: isRunning(n) })),
    postgres: state.postgres ? { pid: pgPid, port: state.postgres.port, dataDir: state.postgres.dataDir, running: pgPid !== null } : null,
    workers: state.workers.map((w) => ({ pid: w.pid, taskQueue: w.taskQueue, metricsUrl: w.metricsUrl, running: isRunning(w) })),
    ui: state.ui ? { pid: state.ui.pid, url: state.ui.url, running: isRunning(state.ui) } : null,
    panel: state.panel ? { pid: state.panel.pid, url: state.panel.url, tokenFile: state.panel.tokenFile, running: isRunning(state.panel) } : null,
    balancer: state.balancer ? { pid: state.balancer.pid, address: state.balancer.address, running: isRunning(state.balancer) } : null,
    shards: state.shards,
    versions: state.versions,
    startedAt: state.startedAt,
  };
  const parts = [...status.nodes, status.postgres, ...status.workers, status.ui, status.panel, status.balancer];
  status.running = parts.every((p) => p?.running);
  return status;
}

/** The cluster recorded in `dir` (default `<TETHER_HOME>/cluster`), or null when there is none. */
export async function clusterStatus(dir?: string): Promise<ClusterStatus | null> {
  const resolved = clusterDir(dir);
  const state = await readState(resolved);
  return state ? describeState(resolved, state) : null;
}
