import { msToTs } from '@temporalio/common/lib/time.js';
import { describe, expect, it } from 'vitest';
import { connectTether, getStatus, startRun } from '../src/client/runs.js';
import { temporalAddress } from './helpers/temporal.js';

const spec = { goal: 'x', model: 'scripted:demo', critic: { policy: 'off' as const } };

describe('a namespace Tether did not set up', () => {
  it("says a namespace lacks Tether's search attributes, and how to register them, instead of 'Failed to start Workflow'", async () => {
    const namespace = `bare-${Date.now()}`;
    const setup = await connectTether({ address: temporalAddress() });
    await setup.connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    await setup.close();
    const tc = await connectTether({ address: temporalAddress(), namespace });
    try {
      // A new namespace takes a moment to reach every service: until then the server says it is not found.
      let err: Error | undefined;
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
        err = await startRun(tc, spec).then(
          () => undefined,
          (e: Error) => e,
        );
        if (!/does not exist/.test(err?.message ?? '')) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(err?.message).toMatch(
        /^this namespace lacks Tether's search attribute Tether\w+ \(a server Tether did not start\): `tether doctor` says how to register them$/,
      );
      expect(err).toMatchObject({ code: 'invalid' });
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
