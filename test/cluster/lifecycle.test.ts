import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { processesUnder } from '../../src/cluster/processes.js';
import { isProcessAlive } from '../../src/tools/process-tree.js';
import type { ClusterStatus } from '../../src/cluster/status.js';
import { startRun } from '../../src/client/runs.js';
import { waitForResult } from '../../src/client/run-result.js';
import {
  clusterTempDir,
  expectNothingRunning,
  FREE_PORTS,
  lastJson,
  startTestCluster,
  stillRunning,
  type TestCluster,
  tetherCli,
  until,
} from './helpers/cluster.js';

const run = promisify(execFile);
const finish = { reply: { toolCalls: [{ name: 'finish', args: { summary: 'hello from the cluster' } }] } };

/** A digest of every file under `dir`, names and contents, to show nothing changed. */
async function digest(dir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const entry of (await readdir(dir, { recursive: true, withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    hash.update(file).update(await readFile(file));
  }
  return hash.digest('hex');
}

/**
 * As compose's `restart: unless-stopped` does: a SIGKILLed worker and panel
 * are started again with their settings (the panel on its URL, with its
 * token), the restarts are counted, and the cluster runs runs again.
 */
async function expectPartsStartedAgain(cluster: TestCluster): Promise<void> {
  const before = cluster.status;
  process.kill(before.workers[0].pid, 'SIGKILL');
  process.kill(before.panel!.pid, 'SIGKILL');
  const after = await until('the worker and the panel to be started again', async () => {
    const now = lastJson<ClusterStatus>(await tetherCli(['cluster', 'status', '--dir', cluster.dir, '--output', 'json'], cluster.env));
    return now.workers[0].restarts === 1 && now.panel?.restarts === 1 && now.running ? now : undefined;
  });
  expect(after.workers[0].pid).not.toBe(before.workers[0].pid);
  expect(after.panel!.pid).not.toBe(before.panel!.pid);
  expect(after.workers.slice(1).map((w) => w.restarts)).toEqual([0, 0]);
  const runs = await until('the panel to answer again', async () => {
    const res = await fetch(`${before.panel!.url}api/runs`, { headers: { authorization: `Bearer ${cluster.panelToken}` } }).catch(() => null);
    return res?.status === 200 ? res : undefined;
  });
  expect(runs.status).toBe(200);
  // Its log names the restart, with the new pid.
  expect(await readFile(path.join(cluster.dir, 'logs', 'supervisor.log'), 'utf8')).toContain(
    `worker 1 (pid ${before.workers[0].pid}) stopped; started it again (pid ${after.workers[0].pid})`,
  );
  const ids = await Promise.all(
    Array.from(
      { length: 3 },
      async (_, i) =>
        (await startRun(cluster.tc, { goal: 'again', model: 'scripted:hello', critic: { policy: 'off' } }, { id: `again-${Date.now()}-${i}` })).runId,
    ),
  );
  for (const runId of ids) expect(await waitForResult(cluster.tc, runId)).toMatchObject({ status: 'completed' });
}

describe('tether cluster up | status | down', () => {
  it('starts two nodes, PostgreSQL, the UI, three workers and the panel, refuses a second up, and stops exactly what it started', async () => {
    const cluster = await startTestCluster({ hello: { steps: [finish] } });
    let onlooker!: ChildProcess;
    try {
      const { status } = cluster;
      expect(status.running).toBe(true);
      expect(status.frontends).toHaveLength(2);
      expect(status.nodes.map((n) => n.services)).toEqual([
        ['frontend', 'history', 'matching', 'worker'],
        ['frontend', 'history', 'matching', 'worker'],
      ]);
      expect(status.postgres).toMatchObject({ running: true, port: expect.any(Number), pid: expect.any(Number) });
      expect(status.workers.map((w) => w.taskQueue)).toEqual(['tether', 'tether', 'tether']);
      expect(status.ui?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${status.ui!.url}/api/v1/namespaces/default`)).status).toBe(200);
      const runs = await fetch(`${status.panel!.url}api/runs`, { headers: { authorization: `Bearer ${cluster.panelToken}` } });
      expect(runs.status).toBe(200);
      // The token came from TETHER_PANEL_TOKEN: no file holds it, and the panel's log (it prints the token link) is private.
      expect(status.panel?.tokenFile).toBeNull();
      expect((await stat(path.join(cluster.dir, 'logs', 'panel.log'))).mode & 0o077).toBe(0);

      const { runId } = await startRun(cluster.tc, { goal: 'say hello', model: 'scripted:hello', critic: { policy: 'off' } }, { id: `hello-${Date.now()}` });
      expect(await waitForResult(cluster.tc, runId)).toMatchObject({ status: 'completed', summary: 'hello from the cluster' });

      const listed = lastJson<ClusterStatus>(await tetherCli(['cluster', 'status', '--dir', cluster.dir, '--output', 'json'], cluster.env));
      expect(listed).toMatchObject({ running: true, frontends: status.frontends, postgres: { pid: status.postgres!.pid, port: status.postgres!.port } });
      expect(listed.nodes.map((n) => n.pid)).toEqual(status.nodes.map((n) => n.pid));

      const text = await tetherCli(['cluster', 'status', '--dir', cluster.dir], cluster.env);
      expect(text.stdout).toContain(`(balancer pid ${status.balancer!.pid})`);
      expect(text.stdout).toContain('token: the TETHER_PANEL_TOKEN `up` was given');
      expect(text.stdout).toContain(`Restart:     unless-stopped (supervisor pid ${status.supervisor!.pid})`);

      await expectPartsStartedAgain(cluster);

      const again = await tetherCli(['cluster', 'up', '--dir', cluster.dir, ...FREE_PORTS], cluster.env);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/a cluster is already running from .* `tether cluster down` stops it/);
      expect(stillRunning(status, cluster.dir).sort()).toEqual(expect.arrayContaining(status.nodes.map((n) => n.pid)));
    } finally {
      // An operator's shell looking into a worker's directory is not a tool's leftover: `down` leaves it alone.
      const looking = path.join(cluster.dir, 'workers', 'worker-1', 'workspaces');
      await mkdir(looking, { recursive: true });
      onlooker = spawn('sleep', ['300'], { cwd: looking, env: { PATH: process.env.PATH, HOME: '/root' } });
      await cluster.down();
    }
    expect(onlooker.exitCode).toBeNull();
    expect(onlooker.signalCode).toBeNull();
    onlooker.kill('SIGKILL');
    const after = await tetherCli(['cluster', 'status', '--dir', cluster.dir], cluster.env);
    expect(after.stderr).toMatch(/no cluster is recorded/);
  });

  it('stays attached with --foreground and stops everything it started on one SIGTERM', async () => {
    const dir = await clusterTempDir();
    const tether = fileURLToPath(new URL('../../bin/tether.js', import.meta.url));
    const child = spawn(process.execPath, [tether, 'cluster', 'up', '--foreground', '--dir', dir, ...FREE_PORTS, '--output', 'json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const status = await until(
      'the foreground cluster to be up',
      async () => (stdout.includes('\n') ? (JSON.parse(stdout) as ClusterStatus) : undefined),
      240_000,
    );
    expect(status.running).toBe(true);
    expect(status.supervisor?.pid).toBe(child.pid);
    // In the foreground, `up` itself starts a stopped part again, and says so.
    process.kill(status.workers[1].pid, 'SIGKILL');
    const restarted = await until('worker 2 to be started again', async () => {
      const said = new RegExp(`worker 2 \\(pid ${status.workers[1].pid}\\) stopped; started it again \\(pid (\\d+)\\)`).exec(stderr);
      return said ? Number(said[1]) : undefined;
    });
    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 60_000))]);
    expect(code, stderr).toBe(0);
    expectNothingRunning(status, dir);
    expect(isProcessAlive(restarted)).toBe(false);
    expect(existsSync(path.join(dir, 'cluster.json'))).toBe(false);
  });

  it('stops what it had started when Ctrl-C interrupts the start-up', async () => {
    const dir = await clusterTempDir();
    const tether = fileURLToPath(new URL('../../bin/tether.js', import.meta.url));
    const child = spawn(process.execPath, [tether, 'cluster', 'up', '--dir', dir, ...FREE_PORTS], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await until('PostgreSQL and the first node to be starting', async () => (stderr.includes('Temporal v1.32.0 nodes') ? true : undefined), 120_000);
    const state = JSON.parse(await readFile(path.join(dir, 'cluster.json'), 'utf8')) as { postgres: { dataDir: string } };
    expect(state.postgres.dataDir).toBe(path.join(dir, 'postgres'));
    child.kill('SIGINT');
    expect(await exited).toBe(1);
    expect(stderr).toMatch(/interrupted by SIGINT; everything started so far was stopped/);
    expect(existsSync(path.join(dir, 'cluster.json'))).toBe(false);
    expect(existsSync(path.join(dir, 'postgres', 'postmaster.pid'))).toBe(false);
    expect(processesUnder(dir)).toEqual([]);
  });

  it('refuses a short TETHER_PANEL_TOKEN and a bad --worker-shutdown-grace before it starts anything', async () => {
    const dir = await clusterTempDir();
    const short = await tetherCli(['cluster', 'up', '--dir', dir, ...FREE_PORTS], { ...process.env, TETHER_PANEL_TOKEN: 'short' });
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/TETHER_PANEL_TOKEN has 5 characters, fewer than the 24 required/);
    expect(short.stderr).not.toContain('short');
    const grace = await tetherCli(['cluster', 'up', '--dir', dir, ...FREE_PORTS, '--worker-shutdown-grace', 'bogus']);
    expect(grace.code).toBe(2);
    expect(grace.stderr).toMatch(/--worker-shutdown-grace: invalid duration "bogus"/);
    expect(existsSync(path.join(dir, 'postgres'))).toBe(false);
    expect(existsSync(path.join(dir, 'cluster.json'))).toBe(false);
  });

  it('keeps the shard count a database was created with', async () => {
    const dir = await clusterTempDir();
    await mkdir(dir);
    await writeFile(path.join(dir, 'shards'), '64\n');
    const result = await tetherCli(['cluster', 'up', '--dir', dir, ...FREE_PORTS, '--shards', '128']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/was created with 64 history shards and a cluster cannot change its shard count/);
  });

  it('refuses a port in use with the flag that moves it, and starts nothing', async () => {
    const busy: Server = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    const dir = await clusterTempDir();
    try {
      const result = await tetherCli(['cluster', 'up', '--dir', dir, ...FREE_PORTS, '--ui-port', String(port)]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`port in use on 127.0.0.1: ${port} (the Temporal UI; move it with --ui-port). Nothing was started.`);
      expect(existsSync(path.join(dir, 'postgres'))).toBe(false);
      expect(existsSync(path.join(dir, 'cluster.json'))).toBe(false);
    } finally {
      busy.close();
    }
  });

  it('says how to get Go when the programs are not built and no toolchain is found, and starts nothing', async () => {
    const dir = await clusterTempDir();
    const home = path.dirname(dir);
    const path_ = (process.env.PATH ?? '')
      .split(path.delimiter)
      .filter((d) => !existsSync(path.join(d, 'go')))
      .join(path.delimiter);
    const result = await tetherCli(['cluster', 'up', '--dir', dir, ...FREE_PORTS], { ...process.env, TETHER_HOME: home, PATH: path_, TETHER_GO: '' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/no Go toolchain was found .* Install Go 1\.26\.8 or newer/);
    expect(existsSync(path.join(dir, 'postgres'))).toBe(false);
  });

  it('leaves a data directory PostgreSQL refuses exactly as it was, quotes why, and stops what it started', async () => {
    const dir = await clusterTempDir();
    const dataDir = path.join(dir, 'postgres');
    await mkdir(dir);
    await mkdir(dataDir, { mode: 0o700 });
    // A data directory of a PostgreSQL major this machine does not run.
    await writeFile(path.join(dataDir, 'PG_VERSION'), '9\n');
    await writeFile(path.join(dataDir, 'postgresql.conf'), '');
    await writeFile(path.join(dataDir, 'precious.dat'), 'rows nobody may lose');
    await writeFile(path.join(dir, 'postgres-password'), 'kept\n', { mode: 0o600 });
    // Owned by the user PostgreSQL runs as (under root: postgres), as a real data directory would be.
    if (process.getuid?.() === 0) await run('chown', ['-R', 'postgres:postgres', dataDir]);
    const before = await digest(dataDir);
    const result = await tetherCli(['cluster', 'up', '--dir', dir, ...FREE_PORTS]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/PostgreSQL did not start .*left as it was/);
    expect(result.stderr).toMatch(/database files are incompatible with server/);
    expect(await digest(dataDir)).toBe(before);
    expect(existsSync(path.join(dir, 'cluster.json'))).toBe(false);
  });

  it('refuses a --dir whose postgres directory is not a data directory, without touching it', async () => {
    const dir = await clusterTempDir();
    await mkdir(path.join(dir, 'postgres'), { recursive: true });
    await writeFile(path.join(dir, 'postgres', 'notes.txt'), 'mine');
    const result = await tetherCli(['cluster', 'up', '--dir', dir, ...FREE_PORTS]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/is not a PostgreSQL data directory \(no PG_VERSION\): move it away; it was left untouched/);
    expect(await readFile(path.join(dir, 'postgres', 'notes.txt'), 'utf8')).toBe('mine');
  });
});
