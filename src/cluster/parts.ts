import path from 'node:path';
import { PROJECT_ROOT } from '../api/home.js';
import { type ResolvedToken, resolveToken } from '../ops/access-token.js';
import type { ClusterBinaries } from './binaries.js';
import { LOOPBACK } from './layout.js';
import { type Spawned, spawnDetached } from './processes.js';
import { frontendAnswers, httpOk, waitUntil } from './readiness.js';
import { DEPLOY_DIR } from './temporal.js';

const TETHER_BIN = path.join(PROJECT_ROOT, 'bin', 'tether.js');

/** Runs a `tether` verb as a detached process. */
function tether(args: string[], env: NodeJS.ProcessEnv, log: string): Promise<Spawned> {
  return spawnDetached(process.execPath, [TETHER_BIN, ...args], { env, log, cwd: PROJECT_ROOT });
}

/** A process just started, and how to wait until it serves (separate, so it is recorded before the wait). */
export type Launched<T = object> = Spawned & T & { ready(): Promise<void> };

/** Where Tether processes find the cluster, from the caller's environment otherwise. */
export interface TetherTarget {
  address: string;
  namespace: string;
  taskQueue: string;
}

function targetEnv(target: TetherTarget): NodeJS.ProcessEnv {
  return { ...process.env, TEMPORAL_ADDRESS: target.address, TEMPORAL_NAMESPACE: target.namespace, TETHER_TASK_QUEUE: target.taskQueue };
}

/**
 * `tether cluster supervise`, which starts stopped parts again. It has the
 * caller's environment, as the workers do: a worker it restarts gets the same
 * provider keys, which so stay in memory, never in the state file.
 */
export function launchSupervisor(dir: string, logDir: string): Promise<Spawned> {
  return tether(['cluster', 'supervise', '--dir', dir], process.env, path.join(logDir, 'supervisor.log'));
}

/** The TCP balancer in front of the frontends (`tether cluster balance`), ready once it reaches a frontend. */
export async function launchBalancer(address: string, frontends: string[], logDir: string, signal?: AbortSignal): Promise<Launched> {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME };
  const proc = await tether(['cluster', 'balance', '--listen', address, '--to', frontends.join(',')], env, path.join(logDir, 'balancer.log'));
  return { ...proc, ready: () => waitUntil(`the frontend balancer (${address})`, () => frontendAnswers(address), { timeoutMs: 60_000, proc, signal }) };
}

/** The Temporal UI server with deploy/ui/docker.yaml, bound to loopback, talking to the balancer. */
export async function launchUi(
  bin: ClusterBinaries,
  port: number,
  target: TetherTarget,
  logDir: string,
  signal?: AbortSignal,
): Promise<Launched<{ url: string }>> {
  const url = `http://${LOOPBACK}:${port}`;
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: target.address,
    TEMPORAL_UI_HOST: LOOPBACK,
    TEMPORAL_UI_PORT: String(port),
    TEMPORAL_UI_ORIGIN: url,
    TEMPORAL_DEFAULT_NAMESPACE: target.namespace,
    TEMPORAL_CODEC_ENDPOINT: process.env.TETHER_CODEC_ENDPOINT ?? '',
  };
  const proc = await spawnDetached(bin.ui, ['--root', DEPLOY_DIR, '--config', 'ui', '--env', 'docker', 'start'], {
    env,
    log: path.join(logDir, 'ui.log'),
    cwd: path.dirname(logDir),
  });
  const check = () => httpOk(`${url}/api/v1/namespaces/${encodeURIComponent(target.namespace)}`);
  return { ...proc, url, ready: () => waitUntil(`the Temporal UI (${url})`, check, { timeoutMs: 60_000, proc, signal }) };
}

/**
 * One `tether worker` with the caller's environment (provider keys, base
 * URLs) and a TETHER_HOME of its own: its workspaces are its own disk, as on
 * a machine of its own. Ready when its /ready says it polls.
 */
export async function launchWorker(
  n: number,
  opts: { target: TetherTarget; metricsPort: number; home: string; grace: string; logDir: string; signal?: AbortSignal },
): Promise<Launched<{ metricsUrl: string }>> {
  const metricsUrl = `http://${LOOPBACK}:${opts.metricsPort}`;
  const args = ['worker', '--metrics-port', String(opts.metricsPort), '--metrics-host', LOOPBACK, '--shutdown-grace', opts.grace];
  // A token port of the caller's would be one port for every worker on this host: each takes a free one, unless live tokens are off.
  const { TETHER_TOKEN_PORT: tokenPort, ...env } = targetEnv(opts.target);
  const ownPort = tokenPort === 'off' ? { TETHER_TOKEN_PORT: 'off' } : {};
  const proc = await tether(args, { ...env, ...ownPort, TETHER_HOME: opts.home }, path.join(opts.logDir, `worker-${n}.log`));
  // Each worker bundles the workflows at start: on two busy cores that takes a while.
  const ready = () => waitUntil(`worker ${n}`, () => httpOk(`${metricsUrl}/ready`), { timeoutMs: 180_000, proc, signal: opts.signal });
  return { ...proc, metricsUrl, ready };
}

/**
 * The panel's token: the caller's TETHER_PANEL_TOKEN (checked, so a short one
 * stops `up` before anything starts), else the one kept in `<dir>/panel-token`.
 */
export function clusterPanelToken(dir: string): Promise<ResolvedToken> {
  return resolveToken('TETHER_PANEL_TOKEN', 'panel-token', { ...process.env, TETHER_HOME: dir });
}

/** `tether panel` on loopback, linking runs to the cluster's UI. */
export async function launchPanel(opts: {
  target: TetherTarget;
  port: number;
  token: string;
  uiUrl: string;
  logDir: string;
  signal?: AbortSignal;
}): Promise<Launched<{ url: string }>> {
  const url = `http://${LOOPBACK}:${opts.port}/`;
  const args = ['panel', '--port', String(opts.port), '--host', LOOPBACK, '--temporal-ui', opts.uiUrl];
  const proc = await tether(args, { ...targetEnv(opts.target), TETHER_PANEL_TOKEN: opts.token }, path.join(opts.logDir, 'panel.log'));
  return { ...proc, url, ready: () => waitUntil(`the panel (${url})`, () => httpOk(`${url}ready`), { timeoutMs: 90_000, proc, signal: opts.signal }) };
}
