import type { Command } from 'commander';
import type { ClusterStatus } from '../../cluster/status.js';
import type { UpResult } from '../../cluster/up.js';
import { TetherError } from '../../client/errors.js';
import { runService } from '../lifecycle.js';
import { action, announce, note, type OutputFormat, printFields, printJson } from '../output.js';
import { decimal } from '../decimal.js';
import { durationOption } from '../duration-option.js';
import { RESTART_POLICIES, type RestartPolicy } from '../../cluster/restart-policy.js';

interface UpFlags {
  foreground?: boolean;
  dir?: string;
  port: string;
  uiPort: string;
  panelPort: string;
  postgresPort: string;
  nodeBasePort: string;
  shards?: string;
  workers: string;
  workerShutdownGrace: string;
  restart: string;
  output: string;
}

function restartPolicy(value: string): RestartPolicy {
  const policy = RESTART_POLICIES.find((p) => p === value);
  if (!policy) throw new TetherError(`invalid --restart "${value}": use ${RESTART_POLICIES.join(' or ')}`, 'invalid');
  return policy;
}

function int(value: string, flag: string, min: number, max: number): number {
  const n = decimal(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new TetherError(`invalid ${flag} "${value}": use a whole number from ${min} to ${max}`, 'invalid');
  return n;
}

/** Ctrl-C or SIGTERM while `up` runs aborts it, and `up` stops what it had started. */
function abortOnSignal(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    note(`${sig}: stopping the start-up …`);
    controller.abort(new TetherError(`interrupted by ${sig}; everything started so far was stopped`, 'rejected'));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

function statusLines(status: ClusterStatus): Array<[string, string]> {
  const mark = (part: { running?: boolean; restarts: number } | null) =>
    `${part?.restarts ? ` (started again ${part.restarts}×)` : ''}${part?.running ? '' : '  (not running)'}`;
  const balancer = status.balancer ? ` (balancer pid ${status.balancer.pid}${mark(status.balancer)})` : '';
  const token = status.panel?.tokenFile ? `token in ${status.panel.tokenFile}` : 'token: the TETHER_PANEL_TOKEN `up` was given';
  const supervisor = status.supervisor ? ` (supervisor pid ${status.supervisor.pid}${status.supervisor.running ? '' : '  (not running)'})` : '';
  return [
    ['Temporal', `${status.address ?? '-'}${balancer} → ${status.nodes.map((n) => `${n.name} ${n.frontend} pid ${n.pid}${mark(n)}`).join(', ')}`],
    ['Shards', `${status.shards} (server ${status.versions.server})`],
    ['PostgreSQL', status.postgres ? `127.0.0.1:${status.postgres.port} pid ${status.postgres.pid ?? '-'}${mark(status.postgres)}` : '-'],
    ['Temporal UI', status.ui ? `${status.ui.url}${mark(status.ui)}` : '-'],
    ['Workers', status.workers.map((w) => `pid ${w.pid} on ${w.taskQueue}${mark(w)}`).join(', ') || '-'],
    ['Panel', status.panel ? `${status.panel.url}${mark(status.panel)} (${token})` : '-'],
    ['Restart', `${status.restart}${supervisor}`],
    ['State', status.dir],
  ];
}

async function reportUp(format: OutputFormat, result: UpResult, foreground: boolean): Promise<void> {
  const { describeState } = await import('../../cluster/status.js');
  const status = describeState(result.dir, result.state);
  const panel = status.panel ? { ...status.panel, token: result.panelToken } : null;
  if (format === 'json') {
    printJson({ ...status, panel });
    return;
  }
  note(`Cluster ready in ${result.seconds.toFixed(1)} s:`);
  printFields(statusLines(status));
  if (status.panel) note(`Panel with token: ${status.panel.url}#token=${result.panelToken}`);
  note(`Use it with TEMPORAL_ADDRESS=${status.address}. ${foreground ? 'Ctrl-C stops it.' : 'Stop it with `tether cluster down`.'}`);
}

// The cluster's modules load the Temporal client: loaded when a verb runs, so `tether --help` stays fast.
async function up(flags: UpFlags, format: OutputFormat): Promise<void> {
  // Each worker takes it as its --shutdown-grace: a bad one is refused here, before anything starts.
  durationOption(flags.workerShutdownGrace, '--worker-shutdown-grace');
  const { clusterUp } = await import('../../cluster/up.js');
  const aborts = abortOnSignal();
  let result: UpResult;
  try {
    result = await clusterUp({
      dir: flags.dir,
      port: int(flags.port, '--port', 0, 65535),
      uiPort: int(flags.uiPort, '--ui-port', 0, 65535),
      panelPort: int(flags.panelPort, '--panel-port', 0, 65535),
      postgresPort: int(flags.postgresPort, '--postgres-port', 0, 65535),
      nodeBasePort: int(flags.nodeBasePort, '--node-base-port', 0, 65526),
      shards: flags.shards === undefined ? undefined : int(flags.shards, '--shards', 1, 16384),
      workers: int(flags.workers, '--workers', 1, 32),
      workerGrace: flags.workerShutdownGrace,
      restart: restartPolicy(flags.restart),
      foreground: flags.foreground,
      log: note,
      signal: aborts.signal,
    });
  } finally {
    aborts.dispose();
  }
  await reportUp(format, result, Boolean(flags.foreground));
  if (!flags.foreground) return;
  const { superviseCluster } = await import('../../cluster/supervise.js');
  const { clusterDown } = await import('../../cluster/down.js');
  await runService(async (life) => {
    const supervision = superviseCluster(result.dir, { restart: result.state.restart, say: note });
    await life.add('cluster', 'server', async () => {
      await supervision.stop();
      await clusterDown({ dir: result.dir, log: note });
    });
    return { ended: supervision.ended };
  });
}

/** `tether cluster supervise`: what a background `up` leaves running to start stopped parts again. */
async function supervise(flags: { dir: string; output: string }): Promise<void> {
  const { superviseCluster } = await import('../../cluster/supervise.js');
  const say = (message: string) => note(`${new Date().toISOString()} ${message}`);
  await runService(async (life) => {
    const supervision = superviseCluster(flags.dir, { restart: 'unless-stopped', say });
    await life.add('supervisor', 'work', () => supervision.stop());
    say(`supervising the cluster in ${flags.dir}`);
    return { ended: supervision.ended };
  });
}

async function status(flags: { dir?: string; output: string }, format: OutputFormat): Promise<void> {
  const { clusterStatus } = await import('../../cluster/status.js');
  const found = await clusterStatus(flags.dir);
  if (!found) throw new TetherError(`no cluster is recorded in ${flags.dir ?? 'the default directory'}: start one with \`tether cluster up\``, 'not_found');
  if (format === 'json') printJson(found);
  else printFields(statusLines(found));
  if (!found.running) process.exitCode = 1;
}

async function down(flags: { dir?: string; output: string }, format: OutputFormat): Promise<void> {
  const { clusterDown } = await import('../../cluster/down.js');
  const result = await clusterDown({ dir: flags.dir, log: note });
  const text = result.found ? `Stopped the cluster in ${result.dir}; its data stays there.` : `No cluster is recorded in ${result.dir}; nothing to stop.`;
  announce(format, text, { dir: result.dir, stopped: result.found });
}

/** A verb over a cluster directory (`--dir`), with text or JSON output. */
function dirVerb(
  cluster: Command,
  name: string,
  description: string,
  run: (flags: { dir?: string; output: string }, format: OutputFormat) => Promise<void>,
): void {
  cluster
    .command(name)
    .description(description)
    .option('--dir <dir>', 'the cluster directory (default <TETHER_HOME>/cluster)')
    .option('--output <format>', 'text or json', 'text')
    .action(action(run));
}

/** `tether cluster up | status | down` (and the balancer `up` runs in front of the frontends). */
export function registerClusterCommands(program: Command): void {
  const cluster = program.command('cluster').description('the production shape on this machine: PostgreSQL, two Temporal nodes, the UI, workers and the panel');
  cluster
    .command('up')
    .description('start the cluster and return once every part serves (state, data and logs in .tether/cluster/)')
    .option('--foreground', 'stay attached; Ctrl-C or SIGTERM stops everything')
    .option('--dir <dir>', 'state, PostgreSQL data and logs (default <TETHER_HOME>/cluster)')
    .option('--port <port>', 'balanced frontend port, for TEMPORAL_ADDRESS (0 = any free port)', '7233')
    .option('--ui-port <port>', 'Temporal UI port', '8080')
    .option('--panel-port <port>', 'web panel port', '8787')
    .option('--postgres-port <port>', 'PostgreSQL port', '5433')
    .option('--node-base-port <port>', 'node n uses this + 10·n … + 8 (0 = any free ports)', '7300')
    .option('--shards <n>', 'history shards of a new database (fixed for its life; default 64)')
    .option('--workers <n>', 'tether workers', '3')
    .option('--worker-shutdown-grace <duration>', 'how long a stopping worker lets tools finish', '5s')
    .option('--restart <policy>', `${RESTART_POLICIES.join(' or ')}: start a part that stops again, as compose does`, 'unless-stopped')
    .option('--output <format>', 'text or json (the status, once everything is up)', 'text')
    .action(action(up));

  dirVerb(cluster, 'status', 'what runs: frontends, nodes, PostgreSQL, workers, UI and panel', status);
  dirVerb(cluster, 'down', 'stop everything `up` started (data, logs and built programs stay)', down);

  cluster
    .command('supervise', { hidden: true })
    .description('starts stopped parts of the cluster again (a background `up` leaves it running)')
    .requiredOption('--dir <dir>', 'the cluster directory')
    .option('--output <format>', 'text or json', 'text')
    .action(action(supervise));

  cluster
    .command('balance', { hidden: true })
    .description('the TCP balancer `up` runs in front of the frontends')
    .requiredOption('--listen <host:port>', 'where clients connect')
    .requiredOption('--to <addresses>', 'comma-separated frontends')
    .option('--output <format>', 'text or json', 'text')
    .action(
      action(async (flags: { listen: string; to: string; output: string }, format) => {
        await runService(async (life) => {
          const { startBalancer } = await import('../../cluster/balancer.js');
          const balancer = await startBalancer(flags.listen, flags.to.split(','));
          await life.add('balancer', 'server', () => balancer.close());
          announce(format, `balancing ${balancer.address} over ${flags.to}`, { address: balancer.address, frontends: flags.to.split(',') });
          return {};
        });
      }),
    );
}
