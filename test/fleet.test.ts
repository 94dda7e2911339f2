// The fleet emergency stop acts on every run of a namespace, and `list --limit` reads the newest of them all: this file has a dev server of its own.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetEmergency } from '../src/client/fleet.js';
import { listRuns } from '../src/client/list.js';
import { connectTether, controlRun, fleetState, getStatus, startRun, type TetherClient } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startDevServer, type DevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { createTetherWorker } from '../src/worker.js';
import { runCli, startCli } from './helpers/cli-process.js';
import { eventually } from './helpers/eventually.js';
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
  const { worker, connection } = await createTetherWorker({
    address: server.address,
    taskQueue: 'fleet',
    workflowBundle: await workflowBundle(),
    scriptedUrl: scripted.url,
    workspaceRoot: dir,
    logger: pino({ level: 'silent' }),
  });
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

/** The visibility store is eventually consistent: wait until `list` shows every run. */
async function visible(ids: string[], filter: Parameters<typeof listRuns>[1]): Promise<void> {
  await eventually(
    `runs ${ids.join(', ')} to be listed`,
    () => listRuns(tc, filter),
    (runs) => ids.every((id) => runs.some((r) => r.runId === id)),
    { intervalMs: 200 },
  );
}

const spec = { goal: 'x', model: 'scripted:sleepy-loop', critic: { policy: 'off' as const } };

describe('the fleet emergency stop', () => {
  it('trips and clears every running run, and a run started while stopped starts stopped', async () => {
    const ids = await Promise.all([1, 2, 3].map(async (i) => (await startRun(tc, spec, { id: `fleet-${i}-${Date.now()}` })).runId));
    await visible(ids, { open: true });
    const tripped = await fleetEmergency(tc, 'trip', 'maintenance window', { by: 'ops-oncall', via: 'cli' });
    expect(tripped.affected).toEqual(expect.arrayContaining(ids));
    expect(tripped.fleet).toMatchObject({ active: true, reason: 'maintenance window' });
    for (const id of ids) {
      const status = await getStatus(tc, id);
      expect(status.state).toBe('emergency_stopped');
      expect(status.audit?.at(-1)).toMatchObject({ action: 'emergencyStop', by: 'ops-oncall', via: 'cli', detail: 'maintenance window' });
    }

    const late = (await startRun(tc, spec, { id: `fleet-late-${Date.now()}` })).runId;
    const stopped = await eventually(
      `run ${late} to start stopped`,
      () => getStatus(tc, late),
      (s) => s.emergencyStop.active,
    );
    expect(stopped.emergencyStop.reason).toMatch(/maintenance window/);
    expect(stopped.audit?.[0]).toMatchObject({ action: 'emergencyStop', by: 'fleet emergency stop', via: 'run' });

    await visible([...ids, late], { open: true, emergencyStop: true });
    const cleared = await fleetEmergency(tc, 'clear');
    expect(cleared.affected).toEqual(expect.arrayContaining([...ids, late]));
    expect(cleared.fleet.active).toBe(false);
    for (const id of [...ids, late]) {
      expect((await getStatus(tc, id)).state).toBe('running');
      await controlRun(tc, id, 'kill', { reason: 'cleanup' });
    }
  }, 90_000);

  it('takes two operators tripping, then clearing, at once as one: neither reports the other’s runs as failed', async () => {
    const ids = await Promise.all([1, 2].map(async (i) => (await startRun(tc, spec, { id: `fleet-twice-${i}-${Date.now()}` })).runId));
    try {
      await visible(ids, { open: true });
      const trips = await Promise.all([fleetEmergency(tc, 'trip', 'from the pager'), fleetEmergency(tc, 'trip', 'from the panel')]);
      for (const trip of trips) expect(trip.failed).toEqual([]);
      expect(trips.flatMap((t) => t.affected)).toEqual(expect.arrayContaining(ids));
      for (const id of ids) expect((await getStatus(tc, id)).state).toBe('emergency_stopped');

      await visible(ids, { open: true, emergencyStop: true });
      const clears = await Promise.all([fleetEmergency(tc, 'clear'), fleetEmergency(tc, 'clear')]);
      for (const clear of clears) expect(clear.failed).toEqual([]);
      for (const id of ids) expect((await getStatus(tc, id)).state).toBe('running');
    } finally {
      await fleetEmergency(tc, 'clear');
      for (const id of ids) await controlRun(tc, id, 'kill', { reason: 'cleanup' }).catch(() => undefined);
    }
  }, 90_000);

  it('reports a run that no worker polls for as failed, with why, instead of waiting for it', async () => {
    const orphan = (await startRun(tc, spec, { id: `fleet-orphan-${Date.now()}`, taskQueue: 'fleet-orphans' })).runId;
    const served = (await startRun(tc, spec, { id: `fleet-served-${Date.now()}` })).runId;
    try {
      await visible([orphan, served], { open: true });
      const tripped = await fleetEmergency(tc, 'trip', 'incident');
      expect(tripped.affected).toContain(served);
      expect(tripped.affected).not.toContain(orphan);
      // The list may still show runs of the test before as open (visibility lags): ended since, they are neither.
      expect(tripped.failed).toEqual([
        { runId: orphan, error: expect.stringContaining(`no worker polls task queue "fleet-orphans", which run ${orphan} is on`) },
      ]);
    } finally {
      await fleetEmergency(tc, 'clear');
      await tc.client.workflow.getHandle(orphan).terminate('test cleanup');
      await controlRun(tc, served, 'kill', { reason: 'cleanup' });
    }
  }, 60_000);

  it('says at once, and sends nothing, when the workflow that keeps the fleet stop is on a queue no worker polls', async () => {
    const fleetHandle = tc.client.workflow.getHandle('tether-fleet');
    await fleetHandle.terminate('test: move the fleet record to a queue nobody serves').catch(() => undefined);
    const elsewhere = await connectTether({ address: server.address, taskQueue: 'fleet-nobody' });
    try {
      const err = await fleetEmergency(elsewhere, 'trip', 'nobody keeps this').catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'unreachable',
        message: expect.stringContaining('on task queue "fleet-nobody", which no worker polls; nothing was stopped or cleared'),
      });
      expect((err as Error).message).toContain('TETHER_TASK_QUEUE=fleet-nobody tether worker');
    } finally {
      await fleetHandle.terminate('test: cleanup').catch(() => undefined);
      await elsewhere.close();
    }
  });

  it('refuses a blank reason before it marks the fleet stopped, and exits 1 from the CLI when a run could not be stopped', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: server.address, TETHER_TASK_QUEUE: 'fleet' };
    await expect(fleetEmergency(tc, 'trip', '   ')).rejects.toThrow(/emergencyStop: reason: emergencyStop reason must not be empty/);
    const blank = await runCli(['estop', 'trip', '--all', '--reason', ' \t ', '--output', 'json'], env);
    expect(blank.code).toBe(2);
    expect(JSON.parse(blank.stdout.trim().split('\n').pop()!)).toMatchObject({
      error: { code: 'invalid', message: expect.stringContaining('emergencyStop reason must not be empty') },
    });
    expect((await fleetState(tc)).active).toBe(false);
    // One run's blank reason is refused before the CLI connects: no server answers on port 1.
    for (const reason of ['  ', '']) {
      const one = await runCli(['estop', 'trip', 'any-run', '--reason', reason], { ...env, TEMPORAL_ADDRESS: '127.0.0.1:1' });
      expect({ code: one.code, said: one.stderr.includes('emergencyStop reason must not be empty') }).toEqual({ code: 2, said: true });
    }
    const orphan = (await startRun(tc, spec, { id: `fleet-cli-orphan-${Date.now()}`, taskQueue: 'fleet-cli-orphans' })).runId;
    try {
      await visible([orphan], { open: true });
      const tripped = await runCli(['estop', 'trip', '--all', '--reason', 'incident', '--output', 'json'], env);
      expect(tripped.code).toBe(1);
      expect(JSON.parse(tripped.stdout.trim().split('\n').pop()!).failed).toEqual(expect.arrayContaining([expect.objectContaining({ runId: orphan })]));
    } finally {
      await fleetEmergency(tc, 'clear');
      await tc.client.workflow.getHandle(orphan).terminate('test cleanup');
    }
  }, 60_000);

  it('says on stderr that a run started with `tether run` starts emergency-stopped while the fleet is stopped', async () => {
    const id = `cli-fleet-${Date.now()}`;
    await fleetEmergency(tc, 'trip', 'provider incident');
    try {
      const env = { ...process.env, TEMPORAL_ADDRESS: server.address, TETHER_TASK_QUEUE: 'fleet' };
      const run = startCli(['run', '--id', id, '--model', 'scripted:sleepy-loop', '--critic', 'off', 'x'], { env });
      expect(await run.exited).toBe(0);
      expect(run.output()).toContain(
        `the fleet emergency stop is active (provider incident): this run starts emergency-stopped; clear it with tether estop clear ${id} or tether estop clear --all`,
      );
    } finally {
      await fleetEmergency(tc, 'clear');
    }
    await controlRun(tc, id, 'kill', { reason: 'cleanup' });
  }, 60_000);

  it('is read without a worker: a run starts on a queue nobody polls, stopped while the fleet is, and `estop status` shows the fleet', async () => {
    await fleetEmergency(tc, 'trip', 'night freeze');
    const env = { ...process.env, TEMPORAL_ADDRESS: server.address, TETHER_TASK_QUEUE: 'fleet' };
    const ids: string[] = [];
    try {
      // Tripping a stopped fleet again gives it a new reason, not a new start.
      const first = (await fleetEmergency(tc, 'trip', 'night freeze')).fleet.since;
      expect((await fleetEmergency(tc, 'trip', 'night freeze, extended')).fleet).toMatchObject({ reason: 'night freeze, extended', since: first });
      // No worker polls this queue: the fleet's flag comes from its memo, so the start neither waits nor fails.
      const start = await startRun(tc, spec, { id: `fleet-unpolled-${Date.now()}`, taskQueue: 'fleet-unpolled' });
      ids.push(start.runId);
      expect(start.fleetStop).toBe('night freeze, extended');
      const shown = await runCli(['estop', 'status', '--all', '--output', 'json'], env);
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.stdout.trim().split('\n').pop()!).fleet).toMatchObject({ active: true, reason: 'night freeze, extended', since: first });
    } finally {
      await fleetEmergency(tc, 'clear');
      for (const id of ids) await tc.client.workflow.getHandle(id).terminate('test cleanup');
    }
    const after = await startRun(tc, spec, { id: `fleet-unpolled-after-${Date.now()}`, taskQueue: 'fleet-unpolled' });
    await tc.client.workflow.getHandle(after.runId).terminate('test cleanup');
    expect(after.fleetStop).toBeNull();
  }, 60_000);
});

describe('listing runs', () => {
  it('gives the newest by start with a limit, closed ones included, not every open run first', async () => {
    const open = (await startRun(tc, spec, { id: `list-open-${Date.now()}` })).runId;
    const done: string[] = [];
    for (const i of [1, 2]) {
      const { runId } = await startRun(tc, { ...spec, limits: { maxSteps: 1 } }, { id: `list-done-${i}-${Date.now()}` });
      await waitForResult(tc, runId);
      done.push(runId);
    }
    // Visibility lists open runs before closed ones: the closed two must be listed as closed for the order to matter.
    await eventually(
      'the two ended runs to be listed as closed',
      () => listRuns(tc, { limit: 1000 }),
      (runs) => done.every((id) => runs.some((r) => r.runId === id && r.executionStatus !== 'RUNNING')),
      { intervalMs: 200 },
    );
    try {
      expect((await listRuns(tc, { limit: 2 })).map((r) => r.runId)).toEqual([done[1], done[0]]);
    } finally {
      await tc.client.workflow.getHandle(open).terminate('test cleanup');
    }
  }, 60_000);
});
