import type { Command } from 'commander';
import { type Lifecycle, runService } from '../lifecycle.js';
import { action, announce, EXIT, type OutputFormat, printJson, verb } from '../output.js';
import { checkPorts, portOption } from '../ports.js';
import { panelPortCheck } from '../panel-port-check.js';

interface CodecOptions {
  port: string;
  host: string;
  uiOrigin: string;
  output: string;
}

/** `tether codec-server` and `tether doctor`: the operator's tools around a deployment. */
export function registerOpsCommands(program: Command): void {
  const description =
    'serve /encode and /decode so the Temporal UI can show encrypted payloads (needs TETHER_ENCRYPTION_KEY[S]; token from TETHER_CODEC_TOKEN, else generated, saved and printed)';
  verb(program, 'codec-server', description, 'one object once it listens')
    .option('--port <port>', 'port to listen on', '8888')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--ui-origin <origins>', "the Temporal UI's origin; comma-separate several", 'http://localhost:8233')
    .action(action((opts: CodecOptions, format) => runService((life) => startCodecServer(life, opts, format))));

  verb(program, 'doctor', 'check this set-up (Temporal, namespace, search attributes, keys, encryption, ports) and say what to fix')
    .option('--metrics-port <port>', "the worker's metrics port to check", process.env.TETHER_METRICS_PORT || '9464')
    .option('--panel-port <port>', "the panel's port to check", '8787')
    .action(
      action(async (opts: { metricsPort: string; panelPort: string; output: string }, format) => {
        const { formatDoctor, runDoctor } = await import('../../ops/doctor.js');
        const report = await runDoctor({ metricsPort: portOption(opts.metricsPort, '--metrics-port') });
        const panel = await panelPortCheck(portOption(opts.panelPort, '--panel-port'));
        const checks = [...report.checks, panel];
        const full = { ok: report.ok && checks.every((c) => c.status !== 'fail'), checks };
        if (format === 'json') printJson(full);
        else process.stdout.write(formatDoctor(full));
        process.exitCode = full.ok ? EXIT.ok : EXIT.failed;
      }),
    );
}

async function startCodecServer(life: Lifecycle, opts: CodecOptions, format: OutputFormat) {
  const { codecFromEnv } = await import('../../ops/codec.js');
  const codec = codecFromEnv(process.env);
  if (!codec) throw new Error("no key: set TETHER_ENCRYPTION_KEY (or TETHER_ENCRYPTION_KEYS) to the workers' key");
  const port = portOption(opts.port, '--port');
  await checkPorts('codec-server', [{ port, host: opts.host, owner: "the codec server's", flag: '--port' }]);
  const { startCodecServer } = await import('../../ops/codec-server.js');
  const { tokenOrigin } = await import('../../ops/access-token.js');
  const uiOrigin = opts.uiOrigin
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  // Without TETHER_CODEC_TOKEN the token is generated once, saved under TETHER_HOME and printed.
  const server = await startCodecServer({ port, host: opts.host, uiOrigin, codec });
  await life.add('codec server', 'surface', server.close);
  const keyIds = codec.keys.map((k) => k.id);
  const shown = server.token.source === 'env' ? {} : { token: server.token.token, tokenFile: server.token.file };
  const origin = tokenOrigin(server.token, 'TETHER_CODEC_TOKEN');
  announce(
    format,
    `codec server on ${server.url} for ${uiOrigin.join(', ')} (keys ${keyIds.join(', ')}; ${origin}${shown.token ? `: ${shown.token}` : ''}). Ctrl-C to stop.`,
    { url: server.url, uiOrigin, keyIds, ...shown },
  );
  return {};
}
