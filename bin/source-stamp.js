// What the compiled CLI in dist/ was built from, so bin/tether.js can tell a
// stale build from a fresh one without compiling anything: the number of
// source files and the newest modification time among them, as make does.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** @typedef {{ files: number, newestMs: number, newest: string }} SourceStamp */

/**
 * The stamp of the sources under `srcDir` as they are now.
 * @param {string} srcDir
 * @returns {SourceStamp}
 */
export function currentStamp(srcDir) {
  let files = 0;
  let newestMs = 0;
  let newest = '';
  for (const entry of readdirSync(srcDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath ?? entry.path, entry.name);
    const { mtimeMs } = statSync(file);
    files += 1;
    if (mtimeMs > newestMs) {
      newestMs = mtimeMs;
      newest = path.relative(path.dirname(srcDir), file);
    }
  }
  return { files, newestMs, newest };
}

/**
 * Why dist/ cannot be used for the sources as they are now, or null when it can.
 * @param {string} srcDir
 * @param {string} stampFile
 * @returns {string | null}
 */
export function staleness(srcDir, stampFile) {
  let built;
  try {
    built = JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    return 'the CLI is not built yet';
  }
  const now = currentStamp(srcDir);
  if (now.newestMs > built.newestMs) return `${now.newest} changed after the last build`;
  if (now.files !== built.files) return `source files were ${now.files > built.files ? 'added' : 'removed'} after the last build`;
  return null;
}
