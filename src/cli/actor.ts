import os from 'node:os';
import type { Command } from 'commander';
import { type Audit, auditSchema } from '../api/control.js';
import { TetherError } from '../client/errors.js';

/**
 * Who a control verb says sent its message: `--as <name>` when given, else
 * the local account as `user@host`. It goes into the message, so the run's
 * history and audit trail keep it.
 */
export function cliAudit(as: string | undefined, who: () => string = localAccount): Audit {
  if (as === undefined) return { by: who(), via: 'cli' };
  // A name with a newline or an escape would forge rows of the audit table, or repaint the terminal that shows it;
  // a direction override (U+202E …) would show the line reversed.
  if (/[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u.test(as))
    throw new TetherError('--as must not contain control characters (a newline, a tab, an escape) or text-direction marks', 'invalid');
  const audit = auditSchema.safeParse({ by: as, via: 'cli' });
  if (!audit.success) throw new TetherError(`--as: ${audit.error.issues[0]?.message ?? 'not a name'}`, 'invalid');
  return audit.data;
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
