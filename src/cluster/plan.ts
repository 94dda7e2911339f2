import { TetherError } from '../client/runs.js';
import { portFree } from '../server/dev-server.js';
import { freePort } from '../server/free-port.js';
import { type ClusterPorts, duplicatePorts, LOOPBACK, type NodePlan, nodeBaseProblem, planNodes, plannedPorts } from './layout.js';

/** Every port decided: the asked ones, and free ones where 0 was asked. */
export interface ResolvedPorts extends ClusterPorts {
  /** One per worker, always picked free (nobody types them). */
  workerMetricsPorts: number[];
}

/**
 * `count` distinct free ports. freePort picks them below the kernel's
 * ephemeral range, so they also fit the SMALLINT that holds the nodes'
 * membership ports (MAX_NODE_PORT).
 */
async function freePorts(count: number): Promise<number[]> {
  const picked = new Set<number>();
  while (picked.size < count) picked.add(await freePort());
  return [...picked];
}

/**
 * Decides every port of the cluster and checks that each is free, before
 * anything starts: a port in use is an error naming it, what needed it and
 * the flag that moves it.
 */
export async function planCluster(asked: ClusterPorts, counts: { nodes: number; workers: number }): Promise<{ nodes: NodePlan[]; ports: ResolvedPorts }> {
  const baseProblem = nodeBaseProblem(asked.nodeBasePort, counts.nodes);
  if (baseProblem) throw new TetherError(baseProblem, 'invalid');
  const pool = await freePorts(4 + counts.workers + (asked.nodeBasePort ? 0 : 9 * counts.nodes));
  const take = () => pool.pop()!;
  const ports: ResolvedPorts = {
    port: asked.port || take(),
    uiPort: asked.uiPort || take(),
    panelPort: asked.panelPort || take(),
    postgresPort: asked.postgresPort || take(),
    nodeBasePort: asked.nodeBasePort,
    workerMetricsPorts: Array.from({ length: counts.workers }, take),
  };
  const nodes = planNodes(counts.nodes, asked.nodeBasePort, take);
  const planned = plannedPorts(ports, nodes);
  const dupes = duplicatePorts(planned);
  if (dupes.length) {
    throw new TetherError(
      `ports overlap: ${dupes.map((d) => `${d.port} (${d.what}, ${d.flag})`).join(', ')} — node n uses --node-base-port + 10·n … + 8`,
      'invalid',
    );
  }
  const busy = [];
  for (const entry of planned) if (!(await portFree(LOOPBACK, entry.port))) busy.push(entry);
  if (busy.length) {
    const list = busy.map((b) => `${b.port} (${b.what}; move it with ${b.flag})`).join(', ');
    throw new TetherError(`port${busy.length > 1 ? 's' : ''} in use on ${LOOPBACK}: ${list}. Nothing was started.`, 'conflict');
  }
  return { nodes, ports };
}
