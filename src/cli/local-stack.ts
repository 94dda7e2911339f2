import path from 'node:path';
import { tetherHome } from '../api/home.js';
import { connectTether } from '../client/runs.js';
import { startLocalCodecServer } from '../ops/codec-server.js';
import { createLogger } from '../ops/logger.js';
import { type Panel, startPanel } from '../panel/server.js';
import { startDevServer } from '../server/dev-server.js';
import { connectTemporal } from '../server/temporal-connection.js';
import type { Logger } from 'pino';
import { startMetricsServer, type ProbeConnection, workerReadiness } from '../ops/metrics-server.js';
import { type TetherMetrics, withProcessMetrics } from '../ops/metrics.js';
import { freePort } from '../server/free-port.js';
import { createTetherWorker, type TetherWorker } from '../worker.js';
import type { Lifecycle } from './lifecycle.js';
import { note } from './output.js';
import { settingsForOtherShells } from './other-shells.js';
import { checkPorts, listening, type PortClaim } from './ports.js';
import { runningDevServerUi } from '../server/running-ui.js';
import { runsListUrl } from './temporal-ui.js';
import { addServerPart } from './server-part.js';
import { watchBorrowedServer } from './borrowed-server.js';
import { runWorkerPart } from './worker-part.js';

export interface LocalStackOptions {
  /** The verb, for the way out of a busy port (`tether demo --panel-port 8788`). */
  command: string;
  port: number;
  uiPort: number;
  /** Start the web panel on this port (0 = none). */
  panelPort: number;
  /** Use a Temporal server already answering on the port instead of failing. */
  reuseServer: boolean;
  /** Serve the worker's /metrics, /live and /ready on this port (0 or absent = none). */
  metricsPort?: number;
  taskQueue?: string;
}

/** How long in-flight activities may finish when the stack stops: a few seconds, then they are cancelled (their tools die). */
const LOCAL_GRACE_MS = 5_000;

/**
 * Whether a Temporal server answers at `address`: a TCP check first, so nothing waits on a connection timeout when
 * nothing listens, then a second at most for gRPC. A server on this machine answers in milliseconds; something else
 * on the port never does, and is then reported as a busy port at once rather than after a distant server's 5 s.
 */
async function temporalAnswers(port: number, address: string): Promise<boolean> {
  if (!(await listening(port))) return false;
  const connection = await connectTemporal({ address, connectTimeout: 1_000 }).catch(() => null);
  await connection?.close().catch(() => undefined);
  return connection !== null;
}

/**
 * Where the UI of a server this stack joins is: the one its command line names, when it runs on this machine, or
 * the given port when something answers there. `found: false` when neither: the given port is only a guess.
 */
async function borrowedServerUi(port: number, uiPort: number): Promise<{ url: string; found: boolean }> {
  const named = await runningDevServerUi(port);
  if (named) return { url: named, found: true };
  return { url: `http://localhost:${uiPort}`, found: await listening(uiPort) };
}

/** A running local stack: its endpoints and a client. Its parts stop with the lifecycle. */
export type LocalStack = Awaited<ReturnType<typeof startLocalStack>>;

/** The codec server the UI decodes through, and the Temporal dev server, each registered with `life`. */
async function startServerParts(life: Lifecycle, opts: LocalStackOptions, db: string) {
  const codec = await startLocalCodecServer(process.env, { uiPort: opts.uiPort });
  if (codec) await life.add('codec server', 'surface', codec.close);
  const server = await startDevServer({
    port: opts.port,
    uiPort: opts.uiPort,
    db,
    log: note,
    stdio: 'ignore',
    codecEndpoint: process.env.TETHER_CODEC_ENDPOINT ?? codec?.endpoint,
    signal: life.abortSignal,
  });
  const { endedByItself } = await addServerPart(life, server, opts.command);
  return { server, endedByItself };
}

/** The ports the stack listens on: Temporal's and its UI's unless it joins a server already running, the panel's, the worker's metrics'. */
function localStackPortClaims(opts: LocalStackOptions, reuse: boolean): PortClaim[] {
  return [
    ...(reuse
      ? []
      : [
          { port: opts.port, host: '127.0.0.1', owner: "Temporal's", flag: '--port' },
          { port: opts.uiPort, host: '127.0.0.1', owner: "the Temporal UI's", flag: '--ui-port' },
        ]),
    { port: opts.panelPort, host: '127.0.0.1', owner: "the panel's", flag: '--panel-port' },
    ...(opts.metricsPort ? [{ port: opts.metricsPort, host: '127.0.0.1', owner: "the worker's metrics", flag: '--metrics-port' }] : []),
  ];
}

/**
 * The stack's worker, connected to the server at `address`, with its logger and the port its SDK's own metrics are
 * served on (with `--metrics-port` only). A signal while it connects interrupts the start at once.
 */
async function connectStackWorker(life: Lifecycle, opts: LocalStackOptions, address: string) {
  // The demo and dev stack speak through their own output; worker logs stay at warn unless asked for.
  const logger = createLogger({ name: 'tether-worker', level: process.env.TETHER_LOG_LEVEL ?? 'warn' });
  // Its workspaces are its own, as a `tether worker`'s are: a run started here can go on under a
  // `tether worker` (beside it, or after it), which serves a run's tools only on its own queue.
  // A Ctrl-C while the worker connects stops the server under it: the connection would retry for some 20 s.
  let connected = false;
  // Stopped mid-connect, the worker retries against a server that is gone (see above): its warnings are no news.
  void life.interrupted.then(() => {
    if (!connected) logger.level = 'error';
  });
  const temporalMetricsPort = opts.metricsPort ? await freePort() : undefined;
  const { worker, connection, metrics } = await life.during(
    createTetherWorker({
      address,
      taskQueue: opts.taskQueue,
      logger,
      sharedWorkspaces: false,
      shutdownGraceMs: LOCAL_GRACE_MS,
      shutdownSignals: [],
      temporalMetricsPort,
    }).then((created) => {
      connected = true;
      return created;
    }),
    (late) => late.connection.close(),
  );
  return { worker, connection, metrics, logger, temporalMetricsPort };
}

/** What the stack serves, for the banner and for `--output json`. */
interface StackSurfaces {
  address: string;
  uiUrl: string;
  runsUrl: string;
  taskQueue: string;
  panel: Panel | null;
  metricsServer: { url: string } | null;
}

/**
 * The lines that tell a person where each part of the stack is. `stateIn` is the server's state file, or null
 * when the stack joined a server already running; `uiUnanswered` when nothing answers where that server's UI was guessed to be.
 */
function stackBanner(
  stack: StackSurfaces,
  { stateIn, uiUnanswered, cliSettings }: { stateIn: string | null; uiUnanswered: boolean; cliSettings: string },
): string {
  const { address, runsUrl, taskQueue, panel, metricsServer } = stack;
  return [
    `Temporal server  ${address}${stateIn ? ` (state in ${stateIn})` : ' (already running)'}`,
    `Temporal UI      ${runsUrl}${uiUnanswered ? ` (nothing answers there: the server was not started by this command; give its UI's port with --ui-port)` : ''}`,
    `Worker           polling task queue ${taskQueue}${metricsServer ? `; metrics, /live and /ready on ${metricsServer.url}` : ''}`,
    ...(panel ? [`Web panel        ${panel.url}#token=${panel.token}`] : []),
    ...(cliSettings ? [`Other shells     export ${cliSettings}  (then tether run, status, …)`] : []),
  ].join('\n');
}

/** The stack's endpoints as `--output json` gives them. */
function stackEndpoints({ address, uiUrl, runsUrl, taskQueue, panel, metricsServer }: StackSurfaces) {
  return {
    address,
    uiUrl,
    runsUrl,
    taskQueue,
    panelUrl: panel?.url ?? null,
    panelToken: panel?.token ?? null,
    ...(metricsServer ? { metricsUrl: `${metricsServer.url}/metrics` } : {}),
  };
}

/**
 * Temporal dev server (persistent, under .tether/), a worker and the panel in
 * one process. Every port is checked before anything starts; each part is
 * registered with `life` as soon as it runs, so a failure or a signal during
 * start-up stops what had started.
 */
export async function startLocalStack(life: Lifecycle, opts: LocalStackOptions) {
  const address = `127.0.0.1:${opts.port}`;
  const db = path.join(tetherHome(), 'temporal.db');
  const reuse = opts.reuseServer && (await temporalAnswers(opts.port, address));
  await checkPorts(opts.command, localStackPortClaims(opts, reuse));
  const started = reuse ? null : await startServerParts(life, opts, db);
  const server = started?.server ?? null;
  if (!server) {
    note(`Using the Temporal server already running at ${address}.`);
    await life.add('server watch', 'surface', watchBorrowedServer(opts.command, opts.port, address));
  }
  const borrowedUi = server ? null : await borrowedServerUi(opts.port, opts.uiPort);
  const uiUrl = server?.uiUrl ?? borrowedUi?.url ?? `http://localhost:${opts.uiPort}`;
  process.env.TEMPORAL_ADDRESS = address;
  const { worker, connection, metrics, logger, temporalMetricsPort } = await connectStackWorker(life, opts, address);
  const { running } = await runWorkerPart(life, worker, connection);
  const tc = await connectTether({ address, taskQueue: opts.taskQueue });
  await life.add('client', 'surface', tc.close);
  const metricsServer =
    opts.metricsPort && temporalMetricsPort
      ? await serveWorkerMetrics(life, opts.metricsPort, { worker, metrics, temporalMetricsPort, logger, probe: tc.connection, address })
      : null;
  const panel = opts.panelPort ? await startPanel({ client: tc, port: opts.panelPort, host: '127.0.0.1', temporalUiUrl: uiUrl }) : null;
  if (panel) await life.add('panel', 'surface', panel.close);
  const surfaces: StackSurfaces = { address, uiUrl, runsUrl: runsListUrl(uiUrl, tc.namespace), taskQueue: tc.taskQueue, panel, metricsServer };
  const cliSettings = settingsForOtherShells(address, tc);
  return {
    address,
    /** What a `tether` command in another shell must be given to reach this stack ('' with the defaults), before the command. */
    cliPrefix: cliSettings ? `${cliSettings} ` : '',
    uiUrl,
    tc,
    panel,
    banner: stackBanner(surfaces, { stateIn: server ? db : null, uiUnanswered: borrowedUi?.found === false, cliSettings }),
    /** Settles when the worker stops by itself (a fatal error) or the server it started ends by itself, so the service ends with them. */
    ended: Promise.race([running, ...(started ? [started.endedByItself] : [])]),
    /** The same, for `--output json`. */
    endpoints: stackEndpoints(surfaces),
  };
}

/** The stack's worker's /metrics (Tether's series, the process's and the SDK's), /live and /ready, as `tether worker` serves them. */
async function serveWorkerMetrics(
  life: Lifecycle,
  port: number,
  parts: { worker: TetherWorker; metrics: TetherMetrics; temporalMetricsPort: number; logger: Logger; probe: ProbeConnection; address: string },
): Promise<{ url: string }> {
  const server = await startMetricsServer({
    port,
    host: '127.0.0.1',
    registry: withProcessMetrics(parts.metrics.registry),
    temporalMetricsUrl: `http://127.0.0.1:${parts.temporalMetricsPort}/metrics`,
    logger: parts.logger,
    readiness: workerReadiness(parts.worker, parts.probe, { address: parts.address }),
  });
  await life.add('metrics endpoint', 'surface', server.close);
  return server;
}
