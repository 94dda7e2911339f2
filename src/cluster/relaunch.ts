import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { temporalSettings } from '../api/settings.js';
import { binaryPaths } from './binaries.js';
import { clusterPanelToken, launchBalancer, launchPanel, launchUi, launchWorker, type TetherTarget } from './parts.js';
import { DB_USER, findPostgres, postmasterPid, startPostgres } from './postgres.js';
import { isRunning, type Spawned } from './processes.js';
import type { ClusterState } from './state.js';
import { startNode } from './temporal.js';

/** One long-running part of a recorded cluster, as the supervisor sees it. */
export interface ClusterPart {
  /** Stable across restarts: `postgres`, `node-1`, `balancer`, `ui`, `worker-2`, `panel`. */
  key: string;
  /** For messages: what it is and its pid. */
  name: string;
  running: boolean;
}

/** Every part `state` records, dependencies first (a part started again needs those before it). */
export function partsOf(state: ClusterState): ClusterPart[] {
  const pg = state.postgres && { key: 'postgres', name: 'PostgreSQL', running: postmasterPid(state.postgres.dataDir) !== null };
  const nodes = state.nodes.map((n, i) => ({ key: `node-${i + 1}`, name: `Temporal ${n.name} (pid ${n.pid})`, running: isRunning(n) }));
  const balancer = state.balancer && { key: 'balancer', name: `the frontend balancer (pid ${state.balancer.pid})`, running: isRunning(state.balancer) };
  const ui = state.ui && { key: 'ui', name: `the Temporal UI (pid ${state.ui.pid})`, running: isRunning(state.ui) };
  const workers = state.workers.map((w, i) => ({ key: `worker-${i + 1}`, name: `worker ${i + 1} (pid ${w.pid})`, running: isRunning(w) }));
  const panel = state.panel && { key: 'panel', name: `the panel (pid ${state.panel.pid})`, running: isRunning(state.panel) };
  return [pg, ...nodes, balancer, ui, ...workers, panel].filter((part): part is ClusterPart => Boolean(part));
}

/** Records a restarted part in a state read afresh (other parts may have been restarted meanwhile). */
export type RecordRestart = (state: ClusterState) => number;

function required<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`the cluster state does not record ${what}, so it cannot be started again: \`down\`, then \`up\``);
  return value;
}

/** Where Tether's own parts find the cluster. */
function targetOf(state: ClusterState): TetherTarget {
  const settings = temporalSettings(process.env);
  return {
    address: required(state.balancer, 'the balancer').address,
    namespace: state.namespace ?? settings.namespace,
    taskQueue: state.workers[0]?.taskQueue ?? settings.taskQueue,
  };
}

const portOf = (url: string) => Number(new URL(url).port);

function spawned(proc: Spawned, restarts: number): { pid: number; startTime: string; restarts: number } {
  // The supervisor runs on whether or not its children do.
  proc.child.unref();
  return { pid: proc.pid, startTime: proc.startTime, restarts: restarts + 1 };
}

/**
 * Starts one stopped part again with the settings `up` gave it, and returns
 * how to record it. Readiness is not awaited: like Docker, the supervisor
 * only restarts, and a part that fails again is seen stopped again.
 */
export async function relaunch(dir: string, state: ClusterState, key: string): Promise<RecordRestart> {
  const logDir = path.join(dir, 'logs');
  const [kind, number] = key.split('-');
  const index = Number(number) - 1;
  switch (kind) {
    case 'postgres': {
      const recorded = required(state.postgres, 'PostgreSQL');
      await startPostgres({ ...(await findPostgres()), binDir: recorded.binDir }, recorded.dataDir, recorded.port, recorded.log);
      return (s) => {
        const pg = required(s.postgres, 'PostgreSQL');
        pg.restarts += 1;
        return postmasterPid(pg.dataDir) ?? 0;
      };
    }
    case 'node': {
      const node = required(state.nodes[index], key);
      const password = (await readFile(path.join(dir, 'postgres-password'), 'utf8')).trim();
      const db = { port: required(state.postgres, 'PostgreSQL').port, user: DB_USER, password };
      const plan = { name: node.name, frontend: node.frontend, services: node.services, ports: required(node.ports, `the ports of ${node.name}`) };
      const proc = await startNode(binaryPaths(), plan, db, { shards: state.shards, logDir });
      return recordAt(proc, (s) => s.nodes[index]);
    }
    case 'balancer': {
      const balancer = required(state.balancer, 'the balancer');
      const proc = await launchBalancer(
        balancer.address,
        state.nodes.map((n) => n.frontend),
        logDir,
      );
      return recordAt(proc, (s) => s.balancer);
    }
    case 'ui': {
      const proc = await launchUi(binaryPaths(), portOf(required(state.ui, 'the UI').url), targetOf(state), logDir);
      return recordAt(proc, (s) => s.ui);
    }
    case 'worker': {
      const worker = required(state.workers[index], key);
      const proc = await launchWorker(index + 1, {
        target: targetOf(state),
        metricsPort: portOf(worker.metricsUrl),
        home: worker.home,
        grace: state.workerGrace ?? '5s',
        logDir,
      });
      return recordAt(proc, (s) => s.workers[index]);
    }
    case 'panel': {
      const panel = required(state.panel, 'the panel');
      const { token } = await clusterPanelToken(dir);
      const proc = await launchPanel({ target: targetOf(state), port: portOf(panel.url), token, uiUrl: required(state.ui, 'the UI').url, logDir });
      return recordAt(proc, (s) => s.panel);
    }
    default:
      throw new Error(`no part ${key} in the cluster`);
  }
}

/** Records a new process in place of the one at `at` in a fresh state. */
function recordAt(proc: Spawned, at: (state: ClusterState) => { pid: number; startTime: string; restarts: number } | null | undefined): RecordRestart {
  return (state) => {
    const entry = required(at(state), 'the part');
    Object.assign(entry, spawned(proc, entry.restarts));
    return proc.pid;
  };
}
