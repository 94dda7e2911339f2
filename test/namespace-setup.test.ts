import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { msToTs } from '@temporalio/common/lib/time.js';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { connectTether, getStatus, startRun } from '../src/client/runs.js';
import { TETHER_SEARCH_ATTRIBUTES, TetherStateKey } from '../src/api/search-attributes.js';
import { createTetherWorker } from '../src/worker.js';
import { eventually } from './helpers/eventually.js';
import { workflowBundle } from './helpers/harness.js';
import { temporalAddress } from './helpers/temporal.js';

const spec = { goal: 'x', model: 'scripted:demo', critic: { policy: 'off' as const } };

describe('a namespace Tether did not set up', () => {
  it("registers the search attributes a namespace lacks and starts the run, instead of 'Failed to start Workflow'", async () => {
    const namespace = `bare-${Date.now()}`;
    const setup = await connectTether({ address: temporalAddress() });
    await setup.connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    await setup.close();
    const tc = await connectTether({ address: temporalAddress(), namespace });
    try {
      const before = await tc.connection.operatorService.listSearchAttributes({ namespace });
      expect(Object.keys(before.customAttributes ?? {}).filter((name) => name.startsWith('Tether'))).toEqual([]);
      // A new namespace takes a moment to reach every service: until then the server says it is not found.
      const started = await eventually(
        'the start in the new namespace',
        () =>
          startRun(tc, spec).then(
            ({ runId }) => ({ runId, err: undefined }),
            (err: Error) => ({ runId: undefined, err }),
          ),
        ({ err }) => !/does not exist/.test(err?.message ?? ''),
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      expect(started.err).toBeUndefined();
      const description = await tc.client.workflow.getHandle(started.runId!).describe();
      expect(description.typedSearchAttributes.get(TetherStateKey)).toBe('running');
      const after = await tc.connection.operatorService.listSearchAttributes({ namespace });
      expect(
        Object.keys(after.customAttributes ?? {})
          .filter((name) => name.startsWith('Tether'))
          .sort(),
      ).toEqual(TETHER_SEARCH_ATTRIBUTES.map((key) => key.name).sort());
      await tc.client.workflow.getHandle(started.runId!).terminate('test over');
    } finally {
      await tc.close();
    }
  }, 60_000);

  it('has a worker register the search attributes its namespace lacks as it starts', async () => {
    const namespace = `bare-worker-${Date.now()}`;
    const tc = await connectTether({ address: temporalAddress() });
    try {
      await tc.connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
      const tether = () =>
        tc.connection.operatorService
          .listSearchAttributes({ namespace })
          .then(({ customAttributes }) => Object.keys(customAttributes ?? {}).filter((name) => name.startsWith('Tether')));
      expect(await eventually('the new namespace', tether, () => true)).toEqual([]);
      const { worker, connection } = await eventually(
        'a worker in the new namespace',
        async () =>
          createTetherWorker({
            address: temporalAddress(),
            namespace,
            taskQueue: 'bare',
            workflowBundle: await workflowBundle(),
            workspaceRoot: await mkdtemp(path.join(os.tmpdir(), 'tether-bare-')),
            logger: pino({ level: 'silent' }),
          }),
        () => true,
      );
      const running = worker.run();
      try {
        expect((await tether()).sort()).toEqual(TETHER_SEARCH_ATTRIBUTES.map((key) => key.name).sort());
      } finally {
        worker.shutdown();
        await running;
        await connection.close();
      }
    } finally {
      await tc.close();
    }
  }, 60_000);

  it('says a namespace does not exist, rather than that the run does not', async () => {
    const tc = await connectTether({ address: temporalAddress(), namespace: 'no-such-namespace' });
    try {
      await expect(getStatus(tc, 'any-run')).rejects.toMatchObject({
        code: 'not_found',
        message: expect.stringMatching(/^namespace no-such-namespace does not exist on this Temporal server: set TEMPORAL_NAMESPACE/),
      });
      await expect(startRun(tc, spec)).rejects.toMatchObject({
        code: 'not_found',
        message: expect.stringContaining('namespace no-such-namespace does not exist'),
      });
    } finally {
      await tc.close();
    }
  });
});
