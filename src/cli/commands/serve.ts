import path from 'node:path';
import type { Command } from 'commander';
import { startDevServer } from '../../server/dev-server.js';
import { startLocalCodecServer } from '../../ops/codec-server.js';
import { tetherHome } from '../../server/temporal-cli.js';
import { announce, note, serviceAction } from '../output.js';
import { startLocalStack } from '../local-stack.js';
import { runWorkerProcess } from '../worker-process.js';

/** Waits for Ctrl-C or SIGTERM, then runs the clean-up once. */
export function untilSignal(cleanup: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const stop = async (sig: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      note(`${sig}: shutting down …`);
      await cleanup();
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export function registerServeCommands(program: Command): void {
  program
    .command('server')
    .description('run the Temporal dev server (SQLite state, Web UI, Tether search attributes) in the foreground')
    .option('--port <port>', 'gRPC port', '7233')
    .option('--ui-port <port>', 'Temporal UI port', '8233')
    .option('--db <file>', 'SQLite file for persistent state', path.join(tetherHome(), 'temporal.db'))
    .option('--ip <ip>', 'address to bind', '127.0.0.1')
    .option('--headless', 'no Web UI')
    .option('--output <format>', 'text or json (one object once the server is up)', 'text')
    .action(
      serviceAction(async (opts: { port: string; uiPort: string; db: string; ip: string; headless?: boolean; output: string }, format) => {
        // With an encryption key, the UI decodes payloads through a local codec server.
        const codec = await startLocalCodecServer(process.env, { uiPort: Number(opts.uiPort) });
        const server = await startDevServer({
          port: Number(opts.port),
          uiPort: Number(opts.uiPort),
          db: opts.db,
          ip: opts.ip,
          headless: opts.headless,
          log: note,
          stdio: 'inherit',
          codecEndpoint: process.env.TETHER_CODEC_ENDPOINT ?? codec?.endpoint,
        });
        announce(format, `Temporal server at ${server.address}${server.uiUrl ? `, UI at ${server.uiUrl}` : ''} (state in ${opts.db}). Ctrl-C to stop.`, {
          address: server.address,
          uiUrl: server.uiUrl ?? null,
          db: opts.db,
        });
        const exited = server.exited.then((code) => {
          note(`Temporal server exited (${code})`);
          process.exitCode = code ?? 1;
        });
        await Promise.race([untilSignal(() => server.stop()), exited]);
        await codec?.close();
      }),
    );

  program
    .command('worker')
    .description('run a worker: workflows and activities, with metrics and health endpoints')
    .option('--task-queue <name>', 'task queue (default $TETHER_TASK_QUEUE or tether)')
    .option('--metrics-port <port>', 'Prometheus /metrics, /live, /ready', '9464')
    .option('--metrics-host <host>', 'address for the metrics port', '127.0.0.1')
    .option('--shutdown-grace <duration>', 'on SIGTERM, how long in-flight activities may finish', '30s')
    .option('--output <format>', 'text or json (one object once the worker polls)', 'text')
    .action(
      serviceAction(async (opts: { taskQueue?: string; metricsPort: string; metricsHost: string; shutdownGrace: string; output: string }, format) => {
        await runWorkerProcess(opts, format);
      }),
    );

  program
    .command('dev')
    .description('start everything locally: Temporal server (state in .tether/), a worker and the web panel')
    .option('--port <port>', 'Temporal gRPC port', '7233')
    .option('--ui-port <port>', 'Temporal UI port', '8233')
    .option('--panel-port <port>', 'web panel port', '8787')
    .option('--output <format>', 'text or json (one object once everything is up)', 'text')
    .action(
      serviceAction(async (opts: { port: string; uiPort: string; panelPort: string; output: string }, format) => {
        const stack = await startLocalStack({ port: Number(opts.port), uiPort: Number(opts.uiPort), panelPort: Number(opts.panelPort), reuseServer: false });
        announce(format, stack.banner, stack.endpoints);
        await untilSignal(() => stack.stop());
      }),
    );
}
