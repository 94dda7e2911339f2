import os from 'node:os';
import type { Command } from 'commander';
import type { Audit } from '../api/control.js';

/**
 * Who a control verb says sent its message: `--as <name>` when given, else
 * the local account as `user@host`. It goes into the message, so the run's
 * history and audit trail keep it.
 */
export function cliAudit(as: string | undefined, who: () => string = localAccount): Audit {
  return { by: as ?? who(), via: 'cli' };
}

/** `--as <name>` on a control verb. */
export function withAs(cmd: Command): Command {
  return cmd.option('--as <name>', "who sent it, for the run's audit trail (default: user@host)");
}

function localAccount(): string {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    // A uid with no passwd entry (some containers) has no name.
    user = process.env.USER ?? process.env.LOGNAME ?? `uid ${process.getuid?.() ?? '?'}`;
  }
  return `${user}@${os.hostname()}`;
}
