// The fleet emergency stop acts on every run of a namespace, so this file has a dev server of its own.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetEmergency } from '../src/client/fleet.js';
import { listRuns } from '../src/client/list.js';
import { connectTether, controlRun, getStatus, startRun, type TetherClient } from '../src/client/runs.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startDevServer, type DevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { createTetherWorker } from '../src/worker.js';
import { workflowBundle } from './helpers/harness.js';

const scripts: Record<string, Script> = { 'sleepy-loop': { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'sleep 1' } }] } } as Script };

let server: DevServer;
let scripted: ScriptedServer;
let tc: TetherClient;
let stopWorker: () => Promise<void>;

beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-fleet-'));
  server = await startDevServer({ port: await freePort(), db: path.join(dir, 'temporal.db'), headless: true });
  scripted = await startScriptedServer({ port: 0, scripts });
  const { worker, connection } = await createTetherWorker({ address: server.address, taskQueue: 'fleet', workflowBundle: await workflowBundle(), scriptedUrl: scripted.url, workspaceRoot: dir, logger: pino({ level: 'silent' }) });
  const running = worker.run();
  stopWorker = async () => {
    worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
  };
  tc = await connectTether({ address: server.address, taskQueue: 'fleet' });
});

afterAll(async () => {
  await tc?.close();
  await stopWorker?.();
  await scripted?.close();
  await server?.stop();
});

async function visible(ids: string[], filter: Parameters<typeof listRuns>[1]): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const runs = await listRuns(tc, filter);
    if (ids.every((id) => runs.some((r) => r.runId === id))) return;
    await sleep(200);
  }
  throw new Error(`runs ${ids.join(', ')} never became visible`);
}

const spec = { goal: 'x', model: 'scripted:sleepy-loop', critic: { policy: 'off' as const } };

describe('the fleet emergency stop', () => {
  it('trips and clears every running run, and a run started while stopped starts stopped', async () => {
    const ids = await Promise.all([1, 2, 3].map(async (i) => (await startRun(tc, spec, { id: `fleet-${i}-${Date.now()}` })).runId));
    await visible(ids, { open: true });
    const tripped = await fleetEmergency(tc, 'trip', 'maintenance window');
    expect(tripped.affected).toEqual(expect.arrayContaining(ids));
    expect(tripped.fleet).toMatchObject({ active: true, reason: 'maintenance window' });
    for (const id of ids) expect((await getStatus(tc, id)).state).toBe('emergency_stopped');

    const late = (await startRun(tc, spec, { id: `fleet-late-${Date.now()}` })).runId;
    for (let i = 0; i < 50 && !(await getStatus(tc, late).catch(() => null))?.emergencyStop.active; i++) await sleep(100);
    expect((await getStatus(tc, late)).emergencyStop.reason).toMatch(/maintenance window/);

    await visible([...ids, late], { open: true, emergencyStop: true });
    const cleared = await fleetEmergency(tc, 'clear');
    expect(cleared.affected).toEqual(expect.arrayContaining([...ids, late]));
    expect(cleared.fleet.active).toBe(false);
    for (const id of [...ids, late]) {
      expect((await getStatus(tc, id)).state).toBe('running');
      await controlRun(tc, id, 'kill', { reason: 'cleanup' });
    }
  }, 90_000);
});
