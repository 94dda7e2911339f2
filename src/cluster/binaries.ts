import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { tetherHome } from '../api/home.js';
import { withInstallLock } from '../server/temporal-cli.js';

const run = promisify(execFile);

/**
 * The Temporal server the cluster runs: the release the dev server embeds
 * (`temporal --version` says Server 1.32.0). v1.32.2, v1.31.5 and v1.30.9 ask
 * for Go ≥ 1.26.10; v1.31.4 needs a module the proxy does not serve.
 */
export const DEFAULT_SERVER_VERSION = 'v1.32.0';
/** The UI the dev server embeds with that release. */
export const DEFAULT_UI_VERSION = 'v2.54.1';

const SERVER_MODULE = 'go.temporal.io/server';
const UI_MODULE = 'github.com/temporalio/ui-server/v2';

/** The built programs of one cluster, each cached under `<TETHER_HOME>/cluster-bin/` by version. */
export interface ClusterBinaries {
  serverVersion: string;
  uiVersion: string;
  server: string;
  sqlTool: string;
  /** PostgreSQL schema directory of that server release (`temporal/` and `visibility/` inside). */
  schemaDir: string;
  ui: string;
}

/** Where each version lives; a directory appears only when its build finished. */
export function binaryPaths(env: NodeJS.ProcessEnv = process.env): ClusterBinaries {
  const serverVersion = env.TETHER_TEMPORAL_SERVER_VERSION || DEFAULT_SERVER_VERSION;
  const uiVersion = env.TETHER_TEMPORAL_UI_VERSION || DEFAULT_UI_VERSION;
  const root = path.join(tetherHome(env), 'cluster-bin');
  const serverDir = path.join(root, `temporal-server-${serverVersion}`);
  return {
    serverVersion,
    uiVersion,
    server: path.join(serverDir, 'temporal-server'),
    sqlTool: path.join(serverDir, 'temporal-sql-tool'),
    schemaDir: path.join(serverDir, 'schema', 'postgresql', 'v12'),
    ui: path.join(root, `temporal-ui-server-${uiVersion}`, 'temporal-ui-server'),
  };
}

/** Why the cluster's programs cannot be had: the message says what to do. */
export class MissingToolchainError extends Error {
  override name = 'MissingToolchainError';
}

/** The `go` command: $TETHER_GO, else `go` on PATH. */
export function findGo(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.TETHER_GO) return existsSync(env.TETHER_GO) ? env.TETHER_GO : null;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'go'))) return path.join(dir, 'go');
  }
  return null;
}

function noGo(paths: ClusterBinaries): MissingToolchainError {
  return new MissingToolchainError(
    [
      `the cluster needs the Temporal server ${paths.serverVersion} and UI ${paths.uiVersion}, built once from their Go modules, and no Go toolchain was found ($TETHER_GO, \`go\` on PATH).`,
      'Install Go 1.26.8 or newer (https://go.dev/dl/) and run again, or run `bash scripts/ensure-cluster.sh` on a machine that has it;',
      `the programs are cached in ${path.dirname(path.dirname(paths.server))}.`,
    ].join(' '),
  );
}

/** Runs `go install` for `targets` into a fresh directory and returns it. */
async function goInstall(go: string, targets: string[], into: string, log: (m: string) => void): Promise<string> {
  await mkdir(into, { recursive: true });
  const gobin = await mkdtemp(path.join(into, '.build-'));
  const env = { ...process.env, GOBIN: gobin, CGO_ENABLED: '0', GOTOOLCHAIN: process.env.GOTOOLCHAIN || 'local' };
  const started = Date.now();
  log(`go install ${targets.join(' ')} …`);
  try {
    await run(go, ['install', ...targets], { env, timeout: 45 * 60_000, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    await rm(gobin, { recursive: true, force: true });
    const e = err as { stderr?: string; message: string };
    throw new MissingToolchainError(`go install ${targets.join(' ')} failed: ${(e.stderr || e.message).trim().split('\n').slice(-6).join('\n')}`);
  }
  log(`built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return gobin;
}

/** The module's directory in Go's module cache (downloaded by the install). */
async function moduleDir(go: string, module: string): Promise<string> {
  const { stdout } = await run(go, ['mod', 'download', '-json', module], {
    env: { ...process.env, GOTOOLCHAIN: process.env.GOTOOLCHAIN || 'local' },
    timeout: 600_000,
  });
  return (JSON.parse(stdout) as { Dir: string }).Dir;
}

/** Finishes a build in `gobin` and moves it to `dir` whole: a cache directory is complete or absent. */
async function publish(gobin: string, dir: string, finish: () => Promise<void>): Promise<void> {
  try {
    await finish();
    await rm(dir, { recursive: true, force: true });
    await rename(gobin, dir);
  } catch (err) {
    await rm(gobin, { recursive: true, force: true });
    throw err;
  }
}

async function buildServer(go: string, paths: ClusterBinaries, log: (m: string) => void): Promise<void> {
  const dir = path.dirname(paths.server);
  const v = paths.serverVersion;
  log(`Building the Temporal server ${v} and temporal-sql-tool from ${SERVER_MODULE} (once; about 7 minutes on 2 cores with a cold Go cache) …`);
  const gobin = await goInstall(go, [`${SERVER_MODULE}/cmd/server@${v}`, `${SERVER_MODULE}/cmd/tools/sql@${v}`], path.dirname(dir), log);
  await publish(gobin, dir, async () => {
    await rename(path.join(gobin, 'server'), path.join(gobin, 'temporal-server'));
    await rename(path.join(gobin, 'sql'), path.join(gobin, 'temporal-sql-tool'));
    const source = await moduleDir(go, `${SERVER_MODULE}@${v}`);
    await cp(path.join(source, 'schema', 'postgresql', 'v12'), path.join(gobin, 'schema', 'postgresql', 'v12'), { recursive: true });
  });
}

async function buildUi(go: string, paths: ClusterBinaries, log: (m: string) => void): Promise<void> {
  const dir = path.dirname(paths.ui);
  log(`Building the Temporal UI server ${paths.uiVersion} from ${UI_MODULE} (once) …`);
  const gobin = await goInstall(go, [`${UI_MODULE}/cmd/server@${paths.uiVersion}`], path.dirname(dir), log);
  await publish(gobin, dir, () => rename(path.join(gobin, 'server'), path.join(gobin, 'temporal-ui-server')));
}

function complete(paths: ClusterBinaries): { server: boolean; ui: boolean } {
  return { server: existsSync(paths.server) && existsSync(paths.sqlTool) && existsSync(paths.schemaDir), ui: existsSync(paths.ui) };
}

/**
 * The cluster's Temporal server, temporal-sql-tool, schema and UI server:
 * from the cache when built before, else built with `go install` (one build
 * at a time across processes). Throws MissingToolchainError, before anything
 * is started, when they are missing and cannot be built.
 */
export async function ensureClusterBinaries(log: (m: string) => void = () => {}): Promise<ClusterBinaries> {
  const paths = binaryPaths();
  const ready = complete(paths);
  if (ready.server && ready.ui) return paths;
  const go = findGo();
  if (!go) throw noGo(paths);
  return withInstallLock(tetherHome(), log, async () => {
    const now = complete(paths);
    if (!now.server) await buildServer(go, paths, log);
    if (!now.ui) await buildUi(go, paths, log);
    return paths;
  });
}
