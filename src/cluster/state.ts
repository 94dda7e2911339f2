import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { tetherHome } from '../api/home.js';
import { RESTART_POLICIES } from './restart-policy.js';

/**
 * A process `up` started: its pid and the kernel's start time, so a recycled
 * pid is never mistaken for it, and how often the supervisor started it again.
 */
const processSchema = z.object({ pid: z.int(), startTime: z.string(), restarts: z.int().default(0) });

const nodePortsSchema = z.object({
  frontendGrpc: z.int(),
  frontendHttp: z.int(),
  frontendMembership: z.int(),
  historyGrpc: z.int(),
  historyMembership: z.int(),
  matchingGrpc: z.int(),
  matchingMembership: z.int(),
  workerGrpc: z.int(),
  workerMembership: z.int(),
});

const nodeSchema = processSchema.extend({
  name: z.string(),
  frontend: z.string(),
  services: z.array(z.string()),
  /** What the supervisor needs to start the node again (absent in a state written before it could). */
  ports: nodePortsSchema.optional(),
  log: z.string(),
});

/** What `tether cluster up` started, written to `<dir>/cluster.json` as each part starts. */
export const clusterStateSchema = z.object({
  version: z.literal(1),
  startedAt: z.string(),
  /**
   * What starts stopped parts again (`restart`), or at least says they
   * stopped: the `up --foreground` process itself, else a `tether cluster
   * supervise` that `up` left running; null when `up` returned with
   * `--restart no`.
   */
  supervisor: processSchema.nullable(),
  restart: z.enum(RESTART_POLICIES).default('no'),
  /** The namespace and the workers' `--shutdown-grace`, for parts started again. */
  namespace: z.string().optional(),
  workerGrace: z.string().optional(),
  shards: z.int(),
  versions: z.object({ server: z.string(), ui: z.string(), postgres: z.string() }),
  postgres: z.object({ port: z.int(), dataDir: z.string(), binDir: z.string(), log: z.string(), restarts: z.int().default(0) }).nullable(),
  nodes: z.array(nodeSchema),
  balancer: processSchema.extend({ address: z.string(), log: z.string() }).nullable(),
  ui: processSchema.extend({ url: z.string(), log: z.string() }).nullable(),
  workers: z.array(processSchema.extend({ taskQueue: z.string(), metricsUrl: z.string(), home: z.string(), log: z.string() })),
  /** `tokenFile` is null when the token came from the caller's TETHER_PANEL_TOKEN. */
  panel: processSchema.extend({ url: z.string(), tokenFile: z.string().nullable(), log: z.string() }).nullable(),
});

export type ClusterState = z.infer<typeof clusterStateSchema>;
export type TrackedProcess = z.infer<typeof processSchema>;

/** The cluster's directory: `--dir`, else `<TETHER_HOME>/cluster`. */
export function clusterDir(dir?: string): string {
  return path.resolve(dir ?? path.join(tetherHome(), 'cluster'));
}

export function statePath(dir: string): string {
  return path.join(dir, 'cluster.json');
}

/** The recorded state, or null when no cluster was started here (or `down` removed it). */
export async function readState(dir: string): Promise<ClusterState | null> {
  let text: string;
  try {
    text = await readFile(statePath(dir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = clusterStateSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(`${statePath(dir)} is not a cluster state file (${parsed.error.issues[0]?.message}); move it away if it is not Tether's`);
  return parsed.data;
}

/** Writes the state atomically: a crash mid-write leaves the previous state, never half a file. */
export async function writeState(dir: string, state: ClusterState): Promise<void> {
  await mkdir(dir, { recursive: true });
  const file = statePath(dir);
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, file);
}

export async function removeState(dir: string): Promise<void> {
  await rm(statePath(dir), { force: true });
}
