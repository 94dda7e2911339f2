import { temporalSettings } from '../api/settings.js';
import { unreachable } from '../client/errors.js';
import type { TetherClient } from '../client/runs.js';
import { probeTcp } from '../client/tcp-probe.js';
import { action, type OutputFormat } from './output.js';

/**
 * A command body with a connected client and the chosen output format. The
 * Temporal client is loaded here, when a verb needs it, so `tether --help`
 * never pays for it; and only once the server's port answers, so a server
 * that is not running is reported before a second is spent loading it.
 */
export function withClient<O extends { output: string }>(body: (tc: TetherClient, opts: O, format: OutputFormat) => Promise<void>, allowStream = false) {
  return action<O>(async (opts, format) => {
    const { address } = temporalSettings(process.env);
    await probeTcp(address).catch((err: unknown) => {
      throw unreachable(address, err);
    });
    const { connectTether } = await import('../client/runs.js');
    const tc = await connectTether();
    try {
      await body(tc, opts, format);
    } finally {
      await tc.close();
    }
  }, allowStream);
}
