import { temporalSettings } from '../api/settings.js';
import { unreachable } from '../client/errors.js';
import type { TetherClient } from '../client/runs.js';
import { probeTcp } from '../server/tcp-probe.js';
import { action, type OutputFormat } from './output.js';

interface ClientVerbOptions<O, I> {
  /** Checks what the user typed and makes the verb's input of it, before any connection: bad input is reported as such even when the server is down. */
  prepare?: (opts: O) => I | Promise<I>;
  /** Whether the verb takes `--output stream-json`. */
  allowStream?: boolean;
}

/**
 * A command body with a connected client, the chosen output format and its
 * prepared input. The Temporal client is loaded here, when a verb needs it,
 * so `tether --help` never pays for it; and only once the server's port
 * answers, so a server that is not running is reported before a second is
 * spent loading it.
 */
export function withClient<O extends { output: string }, I = undefined>(
  body: (tc: TetherClient, opts: O, format: OutputFormat, input: I) => Promise<void>,
  { prepare, allowStream = false }: ClientVerbOptions<O, I> = {},
) {
  return action<O>(async (opts, format) => {
    const input = (prepare ? await prepare(opts) : undefined) as I;
    const { address } = temporalSettings(process.env);
    await probeTcp(address).catch((err: unknown) => {
      throw unreachable(address, err);
    });
    const { connectTether } = await import('../client/runs.js');
    const tc = await connectTether();
    try {
      await body(tc, opts, format, input);
    } finally {
      await tc.close();
    }
  }, allowStream);
}
