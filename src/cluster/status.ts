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
  nodes: Array<{ name: string; pid: number; frontend: string; services: string[]; running: boolean; restarts: number }>;
  postgres: { pid: number | null; port: number; dataDir: string; running: boolean; restarts: number } | null;
  workers: Array<{ pid: number; taskQueue: string; metricsUrl: string; running: boolean; restarts: number }>;
  ui: { pid: number; url: string; running: boolean; restarts: number } | null;
  /** `tokenFile`: null when the token is the TETHER_PANEL_TOKEN `up` was given. */
  panel: { pid: number; url: string; tokenFile: string | null; running: boolean; restarts: number } | null;
  balancer: { pid: number; address: string; running: boolean; restarts: number } | null;
  /** `unless-stopped`: the supervisor starts a part that stops again (and `restarts` counts it); `no`: nothing does. */
  restart: ClusterState['restart'];
  /** The process that does it (a foreground `up`, or the `tether cluster supervise` a background one left). */
  supervisor: { pid: number; running: boolean } | null;
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
    nodes: state.nodes.map((n) => ({ name: n.name, pid: n.pid, frontend: n.frontend, services: n.services, running: isRunning(n), restarts: n.restarts })),
    postgres: state.postgres
      ? { pid: pgPid, port: state.postgres.port, dataDir: state.postgres.dataDir, running: pgPid !== null, restarts: state.postgres.restarts }
      : null,
    workers: state.workers.map((w) => ({ pid: w.pid, taskQueue: w.taskQueue, metricsUrl: w.metricsUrl, running: isRunning(w), restarts: w.restarts })),
    ui: state.ui ? { pid: state.ui.pid, url: state.ui.url, running: isRunning(state.ui), restarts: state.ui.restarts } : null,
    panel: state.panel
      ? { pid: state.panel.pid, url: state.panel.url, tokenFile: state.panel.tokenFile, running: isRunning(state.panel), restarts: state.panel.restarts }
      : null,
    balancer: state.balancer
      ? { pid: state.balancer.pid, address: state.balancer.address, running: isRunning(state.balancer), restarts: state.balancer.restarts }
      : null,
    restart: state.restart,
    supervisor: state.supervisor ? { pid: state.supervisor.pid, running: isRunning(state.supervisor) } : null,
    shards: state.shards,
    versions: state.versions,
    startedAt: state.startedAt,
  };
  const parts = [...status.nodes, status.postgres, ...status.workers, status.ui, status.panel, status.balancer];
  // Without its supervisor a cluster runs, but would not recover from the next failure.
  status.running = parts.every((p) => p?.running) && (status.supervisor?.running ?? true);
  return status;
}

/** The cluster recorded in `dir` (default `<TETHER_HOME>/cluster`), or null when there is none. */
export async function clusterStatus(dir?: string): Promise<ClusterStatus | null> {
  const resolved = clusterDir(dir);
  const state = await readState(resolved);
  return state ? describeState(resolved, state) : null;
}
