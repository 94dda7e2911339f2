// Loads a CommonJS file through V8's code cache: the bytecode V8 compiled for
// it before, kept beside it, so a start skips parsing and compiling the ~2 MB
// bundled CLI. Node 20 has no compile cache of its own
// (module.enableCompileCache arrived in Node 22). V8 checks the cache against
// the source and its own version and rejects a stale one; then the file is
// compiled as usual and the cache is written again.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

/**
 * Only a short process adds to the cache: a service compiles its whole
 * worker, which would make the cache, read in full at every start, bigger
 * for every quick verb.
 */
const ADDS_WITHIN_SECONDS = 10;

/**
 * `require(file)`, from the code cache at `cacheFile` when it matches. The
 * cache holds what each kind of run (`kind`, e.g. the verb) compiled: V8
 * compiles a function on its first call, so a cache written by `--help`
 * alone would leave `list` compiling the Temporal client every time.
 * @param {string} file
 * @param {string} cacheFile
 * @param {string} kind
 */
export function requireWithCodeCache(file, cacheFile, kind) {
  const source = readFileSync(file, 'utf8');
  const cachedData = readOrUndefined(cacheFile);
  const script = new vm.Script(Module.wrap(source), {
    filename: file,
    cachedData,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const covered = cachedData !== undefined && !script.cachedDataRejected ? kindsIn(`${cacheFile}.kinds`) : [];
  if (!covered.includes(kind)) {
    process.once('exit', () => {
      if (process.uptime() < ADDS_WITHIN_SECONDS) writeCodeCache(script, cacheFile, [...covered, kind]);
    });
  }
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, path.dirname(file));
  return module.exports;
}

/** The kinds of run the cache holds; none when the list is missing or unreadable. */
function kindsIn(file) {
  try {
    const kinds = JSON.parse(readFileSync(file, 'utf8'));
    return Array.isArray(kinds) ? kinds : [];
  } catch {
    return [];
  }
}

function readOrUndefined(file) {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/** Written at exit, so the cache holds the functions this run compiled, not only the top level; best effort, as a cache is. */
function writeCodeCache(script, cacheFile, kinds) {
  try {
    for (const [target, data] of [
      [cacheFile, script.createCachedData()],
      [`${cacheFile}.kinds`, JSON.stringify(kinds)],
    ]) {
      const partial = `${target}.${process.pid}`;
      writeFileSync(partial, data);
      renameSync(partial, target);
    }
  } catch {
    // A read-only checkout starts without the cache, as it would without this file.
  }
}
