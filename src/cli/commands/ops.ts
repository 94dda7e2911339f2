import type { Command } from 'commander';
import { startCodecServer } from '../../ops/codec-server.js';
import { codecFromEnv } from '../../ops/codec.js';
import { formatDoctor, runDoctor } from '../../ops/doctor.js';
import { announce, EXIT, note, parseFormat, serviceAction, printJson, reportError, type OutputFormat } from '../output.js';
import { untilSignal } from './serve.js';

/** `tether codec-server` and `tether doctor`: the operator's tools around a deployment. */
export function registerOpsCommands(program: Command): void {
  program
    .command('codec-server')
    .description('serve /encode and /decode so the Temporal UI can show encrypted payloads (needs TETHER_ENCRYPTION_KEY[S] and TETHER_CODEC_TOKEN)')
    .option('--port <port>', 'port to listen on', '8888')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--ui-origin <origins>', "the Temporal UI's origin; comma-separate several", 'http://localhost:8233')
    .option('--output <format>', 'text or json (one object once it listens)', 'text')
    .action(
      serviceAction(async (opts: { port: string; host: string; uiOrigin: string; output: string }, format) => {
        const codec = codecFromEnv(process.env);
        if (!codec) throw new Error('no key: set TETHER_ENCRYPTION_KEY (or TETHER_ENCRYPTION_KEYS) to the workers\' key');
        const token = process.env.TETHER_CODEC_TOKEN ?? '';
        const uiOrigin = opts.uiOrigin.split(',').map((o) => o.trim()).filter(Boolean);
        const server = await startCodecServer({ port: Number(opts.port), host: opts.host, uiOrigin, token, codec });
        const keyIds = codec.keys.map((k) => k.id);
        announce(format, `codec server on ${server.url} for ${uiOrigin.join(', ')} (keys ${keyIds.join(', ')}). Ctrl-C to stop.`, { url: server.url, uiOrigin, keyIds });
        await untilSignal(() => server.close());
      }),
    );

  program
    .command('doctor')
    .description('check this set-up (Temporal, namespace, search attributes, keys, encryption, ports) and say what to fix')
    .option('--metrics-port <port>', "the worker's metrics port to check", process.env.TETHER_METRICS_PORT || '9464')
    .option('--output <format>', 'text or json', 'text')
    .action(async (opts: { metricsPort: string; output: string }) => {
      let format: OutputFormat = 'text';
      try {
        format = parseFormat(opts.output);
        const report = await runDoctor({ metricsPort: Number(opts.metricsPort) });
        if (format === 'json') printJson(report);
        else process.stdout.write(formatDoctor(report));
        process.exitCode = report.ok ? EXIT.ok : EXIT.failed;
      } catch (err) {
        process.exitCode = reportError(err, format);
      }
    });
}
