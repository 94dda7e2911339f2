import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { type ClusterStatus, clusterStatus } from '../../../src/cluster/status.js';
import { postmasterPid } from '../../../src/cluster/postgres.js';
import { processesUnder } from '../../../src/cluster/processes.js';
import { connectTether, type TetherClient } from '../../../src/client/runs.js';
import type { Script } from '../../../src/scripted/script.js';
import { startScriptedServer, type ScriptedServer } from '../../../src/scripted/server.js';
import { isProcessAlive } from '../../../src/tools/process-runner.js';
import { eventually, isDefined } from '../../helpers/eventually.js';

const TETHER = fileURLToPath(new URL('../../../bin/tether.js', import.meta.url));

/** Every port picked free, so a test cluster never meets another. */
export const FREE_PORTS = ['--port', '0', '--ui-port', '0', '--panel-port', '0', '--postgres-port', '0', '--node-base-port', '0'];

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `tether <args>` as a user would; never throws on a non-zero exit. */
export function tetherCli(args: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 300_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TETHER, ...args], { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The one JSON object a `--output json` command prints last. */
export function lastJson<T>(result: CliResult): T {
  const line = result.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(`no JSON on stdout (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
}

/** A directory for a cluster, searchable by the `postgres` user PostgreSQL runs as under root. */
export async function clusterTempDir(): Promise<string> {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'tether-cluster-'));
  await chmod(parent, 0o755);
  return path.join(parent, 'cluster');
}

/** Polls until `check` returns a value (not undefined), failing after `timeoutMs`: a cluster takes its time. */
export function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  return eventually(what, check, isDefined, { timeoutMs, intervalMs: 200 });
}

/** Every pid a status names: nodes, PostgreSQL, balancer, UI, workers, panel, supervisor. */
export function pidsOf(status: ClusterStatus): number[] {
  return [
    status.supervisor?.pid ?? 0,
    ...status.nodes.map((n) => n.pid),
    status.postgres?.pid ?? 0,
    status.balancer?.pid ?? 0,
    status.ui?.pid ?? 0,
    ...status.workers.map((w) => w.pid),
    status.panel?.pid ?? 0,
  ].filter((pid) => pid > 0);
}

/** What still runs of a cluster: its recorded pids, a postmaster on its data (even a restarted one), its tools' processes. */
export function stillRunning(status: ClusterStatus, dir: string): number[] {
  const postmaster = postmasterPid(path.join(dir, 'postgres'));
  return [...pidsOf(status).filter(isProcessAlive), ...(postmaster ? [postmaster] : []), ...processesUnder(path.join(dir, 'workers'))];
}

/** Asserts that nothing of the cluster runs any more (stopping is done when the command returns). */
export function expectNothingRunning(status: ClusterStatus, dir: string): void {
  expect(stillRunning(status, dir)).toEqual([]);
}

export interface TestCluster {
  dir: string;
  status: ClusterStatus;
  panelToken: string;
  env: NodeJS.ProcessEnv;
  tc: TetherClient;
  scripted: ScriptedServer;
  /** The worker (1-based, in status order) whose disk holds the run's workspace, once it exists. */
  workspaceOf(runId: string): Promise<{ worker: number; dir: string } | undefined>;
  /** `tether cluster down`, then checks that nothing it started runs. */
  down(): Promise<void>;
}

/** Starts a cluster with `tether cluster up` whose workers answer `scripted:<name>` from `scripts`. */
export async function startTestCluster(scripts: Record<string, Script>, extraArgs: string[] = []): Promise<TestCluster> {
  const dir = await clusterTempDir();
  const scripted = await startScriptedServer({ port: 0, scripts });
  const panelToken = randomBytes(24).toString('base64url');
  const env = { ...process.env, TETHER_SCRIPTED_URL: scripted.url, TETHER_PANEL_TOKEN: panelToken };
  const up = await tetherCli(['cluster', 'up', '--dir', dir, ...FREE_PORTS, ...extraArgs, '--output', 'json'], env);
  if (up.code !== 0) {
    await scripted.close();
    throw new Error(`tether cluster up failed (exit ${up.code}):\n${up.stderr}\n${up.stdout}`);
  }
  const status = lastJson<ClusterStatus>(up);
  const tc = await connectTether({ address: status.address!, taskQueue: status.workers[0].taskQueue });
  return {
    dir,
    status,
    panelToken,
    env,
    tc,
    scripted,
    async workspaceOf(runId) {
      for (let n = 1; n <= status.workers.length; n++) {
        const workspace = path.join(dir, 'workers', `worker-${n}`, 'workspaces', runId);
        if ((await readdir(workspace).catch(() => null)) !== null) return { worker: n, dir: workspace };
      }
      return undefined;
    },
    async down() {
      await tc.close();
      // Parts the supervisor started again have new pids: they must stop too.
      const current = await clusterStatus(dir);
      const result = await tetherCli(['cluster', 'down', '--dir', dir, '--output', 'json'], env);
      await scripted.close();
      expect(result.code, result.stderr).toBe(0);
      expectNothingRunning(status, dir);
      if (current) expectNothingRunning(current, dir);
    },
  };
}

/** Lines of a file in a run's workspace (empty when it is not there). */
export async function linesOf(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}
