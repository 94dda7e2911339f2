/**
 * The shape of a local cluster, decided before anything starts: which ports
 * each part listens on and which settings each Temporal node gets. Pure, so
 * the plan can be checked (and unit-tested) without starting a process.
 */

/** The four Temporal services; every node runs all of them, so losing one node loses no service. */
export const TEMPORAL_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;

/** Where every part of the cluster listens. A port of 0 means "any free port". */
export interface ClusterPorts {
  /** The balanced frontend address clients use (TEMPORAL_ADDRESS). */
  port: number;
  uiPort: number;
  panelPort: number;
  postgresPort: number;
  /** Node n (from 0) uses nodeBasePort + 10·n … + 8; 0 picks each port freely. */
  nodeBasePort: number;
}

/** The ports of one Temporal node, named after the server's config template variables. */
export interface NodePorts {
  frontendGrpc: number;
  frontendHttp: number;
  frontendMembership: number;
  historyGrpc: number;
  historyMembership: number;
  matchingGrpc: number;
  matchingMembership: number;
  workerGrpc: number;
  workerMembership: number;
}

/** One Temporal server process of the cluster. */
export interface NodePlan {
  name: string;
  frontend: string;
  services: string[];
  ports: NodePorts;
}

export const LOOPBACK = '127.0.0.1';

/**
 * History shards of a new cluster (fixed for the life of its database). See
 * docs/deploy.md for what was measured and what to pick on real machines.
 */
export const RECOMMENDED_SHARDS = 64;

const NODE_PORT_OFFSETS: Record<keyof NodePorts, number> = {
  frontendGrpc: 0,
  frontendHttp: 1,
  frontendMembership: 2,
  historyGrpc: 3,
  historyMembership: 4,
  matchingGrpc: 5,
  matchingMembership: 6,
  workerGrpc: 7,
  workerMembership: 8,
};

/**
 * The highest port a node may listen on: Temporal's PostgreSQL schema keeps
 * membership ports in a SMALLINT (cluster_membership.rpc_port), so a node
 * with a port above it cannot join the cluster.
 */
export const MAX_NODE_PORT = 32767;

/** Why a node base port cannot work, or null when it can. */
export function nodeBaseProblem(basePort: number, count: number): string | null {
  if (basePort === 0) return null;
  const highest = basePort + 10 * (count - 1) + 8;
  if (highest > MAX_NODE_PORT)
    return `--node-base-port ${basePort} puts node ports up to ${highest}, and Temporal keeps membership ports in a PostgreSQL SMALLINT: use a base of at most ${MAX_NODE_PORT - 10 * (count - 1) - 8}`;
  return null;
}

/** The nodes' ports from a base port, or from `pick` (a free port each, at most MAX_NODE_PORT) when the base is 0. */
export function planNodes(count: number, basePort: number, pick: () => number): NodePlan[] {
  return Array.from({ length: count }, (_, n) => {
    const ports = Object.fromEntries(
      Object.entries(NODE_PORT_OFFSETS).map(([key, offset]) => [key, basePort ? basePort + 10 * n + offset : pick()]),
    ) as unknown as NodePorts;
    return { name: `node-${n + 1}`, frontend: `${LOOPBACK}:${ports.frontendGrpc}`, services: [...TEMPORAL_SERVICES], ports };
  });
}

/** A port the plan needs, with what uses it and the flag that moves it, for a clear "port in use" error. */
export interface PlannedPort {
  port: number;
  what: string;
  flag: string;
}

/** Every fixed port of the plan (worker metrics ports are always picked free, so they are not here). */
export function plannedPorts(ports: ClusterPorts, nodes: NodePlan[]): PlannedPort[] {
  return [
    { port: ports.postgresPort, what: 'PostgreSQL', flag: '--postgres-port' },
    ...nodes.flatMap((node) =>
      Object.entries(node.ports).map(([key, port]) => ({ port, what: `${node.name} ${describePort(key)}`, flag: '--node-base-port' })),
    ),
    { port: ports.port, what: 'the balanced frontend', flag: '--port' },
    { port: ports.uiPort, what: 'the Temporal UI', flag: '--ui-port' },
    { port: ports.panelPort, what: 'the panel', flag: '--panel-port' },
  ];
}

function describePort(key: string): string {
  const [, service, kind] = /^(frontend|history|matching|worker)(Grpc|Http|Membership)$/.exec(key) ?? [];
  return `${service} ${kind === 'Grpc' ? 'gRPC' : kind === 'Http' ? 'HTTP' : 'membership'}`;
}

/** Ports the plan names twice: a base port too close to another flag's port. */
export function duplicatePorts(planned: PlannedPort[]): PlannedPort[] {
  const seen = new Map<number, PlannedPort>();
  const dupes: PlannedPort[] = [];
  for (const entry of planned) {
    const first = seen.get(entry.port);
    if (first) dupes.push(entry);
    else seen.set(entry.port, entry);
  }
  return dupes;
}

/** How a node reaches PostgreSQL. */
export interface DatabaseAccess {
  port: number;
  user: string;
  password: string;
}

/**
 * The environment of one node: the variables deploy/temporal/server.yaml reads,
 * the same names docker-compose.yml sets. Nothing of the caller's environment
 * goes in, so provider keys never reach the Temporal server.
 */
export function nodeEnvironment(
  node: NodePlan,
  db: DatabaseAccess,
  opts: { shards: number; dynamicConfig: string; logLevel?: string },
): Record<string, string> {
  const p = node.ports;
  return {
    DB: 'postgres12',
    POSTGRES_SEEDS: LOOPBACK,
    DB_PORT: String(db.port),
    POSTGRES_USER: db.user,
    POSTGRES_PWD: db.password,
    NUM_HISTORY_SHARDS: String(opts.shards),
    BIND_ON_IP: LOOPBACK,
    FRONTEND_GRPC_PORT: String(p.frontendGrpc),
    FRONTEND_HTTP_PORT: String(p.frontendHttp),
    FRONTEND_MEMBERSHIP_PORT: String(p.frontendMembership),
    HISTORY_GRPC_PORT: String(p.historyGrpc),
    HISTORY_MEMBERSHIP_PORT: String(p.historyMembership),
    MATCHING_GRPC_PORT: String(p.matchingGrpc),
    MATCHING_MEMBERSHIP_PORT: String(p.matchingMembership),
    WORKER_GRPC_PORT: String(p.workerGrpc),
    WORKER_MEMBERSHIP_PORT: String(p.workerMembership),
    DYNAMIC_CONFIG_FILE_PATH: opts.dynamicConfig,
    LOG_LEVEL: opts.logLevel ?? 'warn',
  };
}
