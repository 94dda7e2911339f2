import path from 'node:path';
import type { Command } from 'commander';
import { tetherHome } from '../../api/home.js';
import { DEFAULT_TASK_QUEUE } from '../../api/settings.js';
import { type Lifecycle, runService } from '../lifecycle.js';
import { action, announce, localServerOptions, note, type OutputFormat, verb } from '../output.js';
import { checkPorts, portOption, stackPortOptions } from '../ports.js';

/** The verbs that run a service in the foreground: the dev server, a worker, the local stack. */
export function registerServeCommands(program: Command): void {
  registerServerCommand(program);
  registerWorkerCommand(program);
  registerDevCommand(program);
}

interface ServerOptions {
  port: string;
  uiPort: string;
  db: string;
  ip: string;
  headless?: boolean;
  httpPort: string;
  metricsPort: string;
  output: string;
}

function registerServerCommand(program: Command): void {
  const description = 'run the Temporal dev server (SQLite state, Web UI, Tether search attributes) in the foreground';
  localServerOptions(verb(program, 'server', description, 'one object once the server is up'))
    .option('--db <file>', 'SQLite file for persistent state', path.join(tetherHome(), 'temporal.db'))
    .option('--ip <ip>', 'address to bind', '127.0.0.1')
    .option('--headless', 'no Web UI')
    .option('--http-port <port>', "the server's HTTP API port (0 = a free one)", '0')
    .option('--metrics-port <port>', "the server's Prometheus /metrics port (0 = a free one)", '0')
    .action(action((opts: ServerOptions, format) => runService((life) => startServer(life, opts, format))));
}

async function startServer(life: Lifecycle, opts: ServerOptions, format: OutputFormat) {
  const port = portOption(opts.port, '--port');
  const uiPort = portOption(opts.uiPort, '--ui-port');
  const httpPort = portOption(opts.httpPort, '--http-port');
  const metricsPort = portOption(opts.metricsPort, '--metrics-port');
  await checkPorts('server', [
    { port, host: opts.ip, owner: "Temporal's", flag: '--port' },
    ...(opts.headless ? [] : [{ port: uiPort, host: opts.ip, owner: "the Temporal UI's", flag: '--ui-port' }]),
    ...(httpPort ? [{ port: httpPort, host: opts.ip, owner: "the server's HTTP API", flag: '--http-port' }] : []),
    ...(metricsPort ? [{ port: metricsPort, host: opts.ip, owner: "the server's metrics", flag: '--metrics-port' }] : []),
  ]);
  const { startLocalCodecServer } = await import('../../ops/codec-server.js');
  const { startDevServer } = await import('../../server/dev-server.js');
  // With an encryption key, the UI decodes payloads through a local codec server.
  const codec = await startLocalCodecServer(process.env, { uiPort });
  if (codec) await life.add('codec server', 'surface', codec.close);
  const server = await startDevServer({
    port,
    uiPort,
    httpPort,
    metricsPort,
    db: opts.db,
    ip: opts.ip,
    headless: opts.headless,
    log: note,
    stdio: 'inherit',
    codecEndpoint: process.env.TETHER_CODEC_ENDPOINT ?? codec?.endpoint,
    signal: life.abortSignal,
  });
  const { addServerPart } = await import('../server-part.js');
  const { endedByItself } = await addServerPart(life, server, 'server');
  const { settingsForOtherShells } = await import('../other-shells.js');
  const settings = settingsForOtherShells(server.address, { namespace: 'default', taskQueue: DEFAULT_TASK_QUEUE });
  const reach = settings ? `\nWorkers and other shells: export ${settings}` : '';
  announce(format, `Temporal server at ${server.address}${server.uiUrl ? `, UI at ${server.uiUrl}` : ''} (state in ${opts.db}). Ctrl-C to stop.${reach}`, {
    address: server.address,
    uiUrl: server.uiUrl ?? null,
    db: opts.db,
    httpPort: server.httpPort,
    metricsUrl: server.metricsUrl,
  });
  return { ended: endedByItself };
}

interface WorkerOptions {
  taskQueue?: string;
  metricsPort: string;
  metricsHost: string;
  shutdownGrace: string;
  output: string;
}

// Only the verbs that run a worker load it (and the SDK's native runtime): the others start fast.
function registerWorkerCommand(program: Command): void {
  verb(program, 'worker', 'run a worker: workflows and activities, with metrics and health endpoints', 'one object once the worker polls')
    .option('--task-queue <name>', 'task queue (default $TETHER_TASK_QUEUE or tether)')
    .option('--metrics-port <port>', 'Prometheus /metrics, /live, /ready', process.env.TETHER_METRICS_PORT || '9464')
    .option('--metrics-host <host>', 'address for the metrics port', '127.0.0.1')
    .option('--shutdown-grace <duration>', 'on Ctrl-C or SIGTERM, how long in-flight activities may finish', '30s')
    .action(
      action((opts: WorkerOptions, format) =>
        runService(async (life) => {
          const { startWorkerProcess } = await import('../worker-process.js');
          return { ended: (await startWorkerProcess(life, opts, format)).running };
        }),
      ),
    );
}

function registerDevCommand(program: Command): void {
  const description = 'start everything locally: Temporal server (state in .tether/), a worker and the web panel';
  localServerOptions(verb(program, 'dev', description, 'one object once everything is up'))
    .option('--panel-port <port>', 'web panel port (0 = none)', '8787')
    .option('--metrics-port <port>', "the worker's Prometheus /metrics, /live and /ready (0 = none)", process.env.TETHER_METRICS_PORT || '0')
    .action(
      action((opts: { port: string; uiPort: string; panelPort: string; metricsPort: string; output: string }, format) =>
        runService(async (life) => {
          const { startLocalStack } = await import('../local-stack.js');
          const stack = await startLocalStack(life, {
            command: 'dev',
            ...stackPortOptions(opts),
            metricsPort: portOption(opts.metricsPort, '--metrics-port'),
            reuseServer: false,
          });
          announce(format, `${stack.banner}\nCtrl-C to stop.`, stack.endpoints);
          return { ended: stack.ended };
        }),
      ),
    );
}
