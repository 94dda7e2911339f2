import type { Command } from 'commander';
import { connectTether } from '../client/runs.js';
import { untilSignal } from '../cli/commands/serve.js';
import { announce, serviceAction } from '../cli/output.js';
import { startPanel } from './server.js';

export function registerPanelCommand(program: Command): void {
  program
    .command('panel')
    .description('serve the web control panel (token from TETHER_PANEL_TOKEN, else generated and printed)')
    .option('--port <port>', 'port', '8787')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--temporal-ui <url>', 'Temporal UI base URL for history links', process.env.TEMPORAL_UI_URL ?? 'http://localhost:8233')
    .option('--output <format>', 'text or json (one object once it listens)', 'text')
    .action(
      serviceAction(async (opts: { port: string; host: string; temporalUi: string; output: string }, format) => {
        const tc = await connectTether();
        const panel = await startPanel({ client: tc, port: Number(opts.port), host: opts.host, temporalUiUrl: opts.temporalUi });
        announce(format, `panel at ${panel.url}#token=${panel.token}`, { url: panel.url, token: panel.token });
        await untilSignal(async () => {
          await panel.close();
          await tc.close();
        });
      }),
    );
}
