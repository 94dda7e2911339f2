import type { Command } from 'commander';
import { runService } from '../lifecycle.js';
import { action, announce } from '../output.js';
import { checkPorts, portOption } from '../ports.js';

interface PanelOptions {
  port: string;
  host: string;
  temporalUi: string;
  output: string;
}

/** `tether panel`: the web control panel until Ctrl-C. */
export function registerPanelCommand(program: Command): void {
  program
    .command('panel')
    .description('serve the web control panel (token from TETHER_PANEL_TOKEN, else generated once, saved under TETHER_HOME and printed)')
    .option('--port <port>', 'port', '8787')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--temporal-ui <url>', 'Temporal UI base URL for history links', process.env.TEMPORAL_UI_URL ?? 'http://localhost:8233')
    .option('--output <format>', 'text or json (one object once it listens)', 'text')
    .action(
      action((opts: PanelOptions, format) =>
        runService(async (life) => {
          const port = portOption(opts.port, '--port');
          await checkPorts('panel', [{ port, host: opts.host, owner: "the panel's", flag: '--port' }]);
          const { resolveToken, tokenOrigin } = await import('../../ops/access-token.js');
          const { connectTether } = await import('../../client/runs.js');
          const { startPanel } = await import('../../panel/server.js');
          // A bad token fails before anything connects.
          const token = await resolveToken('TETHER_PANEL_TOKEN', 'panel-token');
          const tc = await connectTether();
          await life.add('client', 'surface', tc.close);
          const panel = await startPanel({ client: tc, port, host: opts.host, temporalUiUrl: opts.temporalUi, token: token.token });
          await life.add('panel', 'surface', panel.close);
          const named = panel.operators.length ? `; named operators from TETHER_PANEL_TOKENS: ${panel.operators.join(', ')}` : '';
          announce(format, `panel at ${panel.url}#token=${panel.token} (${tokenOrigin(token, 'TETHER_PANEL_TOKEN')}${named}). Ctrl-C to stop.`, {
            url: panel.url,
            token: panel.token,
            operators: panel.operators,
            ...(token.file ? { tokenFile: token.file } : {}),
          });
          return {};
        }),
      ),
    );
}
