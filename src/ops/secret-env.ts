import { existsSync } from 'node:fs';
import path from 'node:path';
import { isSecretName } from '../api/secrets.js';

/**
 * The environment the redactor and the secret checks read values from. A
 * secret-named variable whose value names a file or directory on this
 * machine (`TEMPORAL_TLS_KEY_PATH`, `GOOGLE_APPLICATION_CREDENTIALS`,
 * `PGPASSFILE`) points at a secret and is none: the file's contents are the
 * secret, and the sandbox hides the file (src/tools/secret-paths.ts). Taken
 * for a secret, the path was replaced in every text, and so was any half of
 * it: every path with the same start (Tether's home, the workspaces), in the
 * model's own commands before they ran and in Tether's own errors. A value
 * that names nothing here, under a name that is no path's, stays a secret: a
 * random key may start with `/`.
 */
export function secretBearingEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name, value]) => !(value && isSecretName(name) && pointsAtAFile(name, value))));
}

/** Named as a path (`…_PATH`, `…_FILE`, `…_DIR`), or naming something that exists; a `…_DATA` variable holds the secret itself. */
function pointsAtAFile(name: string, value: string): boolean {
  if (!path.isAbsolute(value) || /[\r\n]/.test(value)) return false;
  return /_(PATH|FILE|DIR)$/i.test(name) || existsSync(value);
}
