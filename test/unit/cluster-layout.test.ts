import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dynamicConfigFlags } from '../../bench/dynamic-config.js';
import { DYNAMIC_CONFIG } from '../../src/cluster/temporal.js';
import { duplicatePorts, nodeBaseProblem, nodeEnvironment, planNodes, plannedPorts, TEMPORAL_SERVICES } from '../../src/cluster/layout.js';

const ports = { port: 7233, uiPort: 8080, panelPort: 8787, postgresPort: 5433, nodeBasePort: 7300 };
const db = { port: 5433, user: 'temporal', password: 'pw' };

describe('the cluster layout', () => {
  it('gives each node nine ports from its base, ten apart, and every Temporal service', () => {
    const [first, second] = planNodes(2, 7300, () => 0);
    expect(first).toMatchObject({ name: 'node-1', frontend: '127.0.0.1:7300', services: [...TEMPORAL_SERVICES] });
    expect(Object.values(first.ports).sort()).toEqual([7300, 7301, 7302, 7303, 7304, 7305, 7306, 7307, 7308]);
    expect(second.frontend).toBe('127.0.0.1:7310');
    expect(second.ports.workerMembership).toBe(7318);
  });

  it('takes every node port from the picker when the base is 0', () => {
    let next = 20_000;
    const nodes = planNodes(2, 0, () => next++);
    expect(nodes.flatMap((n) => Object.values(n.ports))).toEqual(Array.from({ length: 18 }, (_, i) => 20_000 + i));
  });

  it('refuses a base whose membership ports would not fit the SMALLINT Temporal stores them in', () => {
    expect(nodeBaseProblem(7300, 2)).toBeNull();
    expect(nodeBaseProblem(32_749, 2)).toBeNull();
    expect(nodeBaseProblem(32_750, 2)).toMatch(/SMALLINT: use a base of at most 32749/);
    expect(nodeBaseProblem(0, 2)).toBeNull();
  });

  it('names what needs each port and the flag that moves it', () => {
    const planned = plannedPorts(
      ports,
      planNodes(2, 7300, () => 0),
    );
    expect(planned).toHaveLength(4 + 18);
    expect(planned).toContainEqual({ port: 7233, what: 'the balanced frontend', flag: '--port' });
    expect(planned).toContainEqual({ port: 7314, what: 'node-2 history membership', flag: '--node-base-port' });
    expect(planned).toContainEqual({ port: 5433, what: 'PostgreSQL', flag: '--postgres-port' });
  });

  it('finds a port two parts would share', () => {
    const planned = plannedPorts(
      { ...ports, port: 7305 },
      planNodes(2, 7300, () => 0),
    );
    expect(duplicatePorts(planned)).toEqual([{ port: 7305, what: 'the balanced frontend', flag: '--port' }]);
    expect(
      duplicatePorts(
        plannedPorts(
          ports,
          planNodes(2, 7300, () => 0),
        ),
      ),
    ).toEqual([]);
  });

  it("configures a node from the server template's variables alone, never the caller's environment", () => {
    process.env.OPENAI_API_KEY = 'sk-secret';
    const [node] = planNodes(1, 7300, () => 0);
    const env = nodeEnvironment(node, db, { shards: 64, dynamicConfig: '/deploy/dynamicconfig/tether.yaml' });
    expect(env).toMatchObject({
      DB: 'postgres12',
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: '5433',
      POSTGRES_USER: 'temporal',
      NUM_HISTORY_SHARDS: '64',
      BIND_ON_IP: '127.0.0.1',
      FRONTEND_GRPC_PORT: '7300',
      WORKER_MEMBERSHIP_PORT: '7308',
      DYNAMIC_CONFIG_FILE_PATH: '/deploy/dynamicconfig/tether.yaml',
    });
    expect(Object.values(env)).not.toContain('sk-secret');
    delete process.env.OPENAI_API_KEY;
  });
});

describe('the dynamic config as dev-server flags', () => {
  it('turns each unconstrained setting into a --dynamic-config-value flag with a JSON value', () => {
    const yaml = ['frontend.enableUpdateWorkflowExecution:', '  - value: true', 'history.transferProcessorMaxPollRPS:', '  - value: 1000', ''].join('\n');
    expect(dynamicConfigFlags(yaml)).toEqual({
      flags: ['--dynamic-config-value', 'frontend.enableUpdateWorkflowExecution=true', '--dynamic-config-value', 'history.transferProcessorMaxPollRPS=1000'],
      skipped: [],
    });
  });

  it('leaves out settings that only apply to some namespaces or task queues, and says so', () => {
    const yaml = ['matching.numTaskqueueReadPartitions:', '  - value: 8', '    constraints:', '      taskQueueName: tether', ''].join('\n');
    expect(dynamicConfigFlags(yaml)).toEqual({ flags: [], skipped: ['matching.numTaskqueueReadPartitions'] });
  });

  it("reads the project's own dynamic config", () => {
    const { flags } = dynamicConfigFlags(readFileSync(DYNAMIC_CONFIG, 'utf8'));
    expect(flags).toContain('frontend.enableUpdateWorkflowExecution=true');
    // The cluster runs with the dev server's lifted transfer-queue pacing.
    expect(flags).toContain('history.transferProcessorMaxPollRPS=1000');
    // and with its timer queue reading 100 ms ahead, so sub-second retry delays keep their jitter.
    expect(flags).toContain('history.timerProcessorMaxTimeShift="100ms"');
  });
});
