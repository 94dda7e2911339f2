import path from 'node:path';
import { connectTether } from '../client/runs.js';
import { startDevServer } from '../server/dev-server.js';
import { tetherHome } from '../server/temporal-cli.js';
import { createTetherWorker } from '../worker.js';
import { createLogger } from '../ops/logger.js';
import { startPanel } from '../panel/server.js';
import { startLocalCodecServer } from '../ops/codec-server.js';
import { note } from './output.js';

export interface LocalStackOptions {
  port: number;
  uiPort: number;
  /** Start the web panel on this port (0 = none). */
  panelPort: number;
  /** Use a Temporal server already answering on the port instead of failing. */
  reuseServer: boolean;
  taskQueue?: string;
}

async function reachable(address: string): Promise<boolean> {
  try {
    const tc = await connectTether({ address });
    await tc.close();
    return true;
  } catch {
    return false;
  }
}

/** Temporal dev server (persistent, under .tether/), a worker and the panel in one process. */
export async function startLocalStack(opts: LocalStackOptions) {
  const address = `127.0.0.1:${opts.port}`;
  const db = path.join(tetherHome(), 'temporal.db');
  const reuse = opts.reuseServer && (await reachable(address));
  const codec = reuse ? null : await startLocalCodecServer(process.env, { uiPort: opts.uiPort });
  const server = reuse ? null : await startDevServer({ port: opts.port, uiPort: opts.uiPort, db, log: note, stdio: 'ignore', codecEndpoint: process.env.TETHER_CODEC_ENDPOINT ?? codec?.endpoint });
  if (reuse) note(`Using the Temporal server already running at ${address}.`);
  const uiUrl = server?.uiUrl ?? `http://localhost:${opts.uiPort}`;
  process.env.TEMPORAL_ADDRESS = address;
  // The demo and dev stack speak through their own output; worker logs stay at warn unless asked for.
  const logger = createLogger({ name: 'tether-worker', level: process.env.TETHER_LOG_LEVEL ?? 'warn' });
  // One worker on one disk: every workspace is "shared", and keeping activities on the
  // workflow's own queue lets the server dispatch them eagerly.
  const { worker, connection } = await createTetherWorker({ address, taskQueue: opts.taskQueue, logger, sharedWorkspaces: true });
  const running = worker.run();
  const tc = await connectTether({ address, taskQueue: opts.taskQueue });
  const panel = opts.panelPort ? await startPanel({ client: tc, port: opts.panelPort, host: '127.0.0.1', temporalUiUrl: uiUrl }) : null;
  const banner = [
    `Temporal server  ${address}${server ? ` (state in ${db})` : ' (already running)'}`,
    `Temporal UI      ${uiUrl}`,
    `Worker           polling task queue ${tc.taskQueue}`,
    ...(panel ? [`Web panel        ${panel.url}#token=${panel.token}`] : []),
  ].join('\n');
  return {
    address,
    uiUrl,
    tc,
    panel,
    banner,
    /** The same, for `--output json`. */
    endpoints: { address, uiUrl, taskQueue: tc.taskQueue, panelUrl: panel?.url ?? null, panelToken: panel?.token ?? null },
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
      await panel?.close();
      await tc.close();
      await server?.stop();
      await codec?.close();
    },
  };
}
