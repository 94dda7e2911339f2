import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlRun } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { startHarness, type Harness } from './helpers/harness.js';

// A model call that takes a minute: the run is waiting (on it, or on the step before) while the test asks for its stack trace.
const scripts: Record<string, Script> = { 'slow-model': { steps: [{ reply: { text: 'late' }, delayMs: 60_000 }] } as Script };
const spec = { goal: 'wait', model: 'scripted:slow-model', critic: { policy: 'off' as const } };

/** The `__stack_trace` query of a run once it waits on its first model call. */
async function stackTraceWhileWaiting(h: Harness): Promise<string> {
  const runId = await h.start(spec);
  await h.until(runId, (s) => s.state === 'running' && s.step === 0);
  const trace = await h.tc.client.workflow.getHandle(runId).query<string>('__stack_trace');
  await controlRun(h.tc, runId, 'kill', { reason: 'test done' });
  expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: 'test done' });
  return trace;
}

describe('workflow stack traces (TETHER_WORKER_STACK_TRACES)', () => {
  let withTraces: Harness;
  let withoutTraces: Harness;
  beforeAll(async () => {
    withTraces = await startHarness({ scripts });
    // No prebuilt bundle: the worker bundles its workflows at start, as `tether worker` does, and reads the variable.
    withoutTraces = await startHarness({ scripts, worker: { workflowBundle: undefined }, env: { ...process.env, TETHER_WORKER_STACK_TRACES: 'off' } });
  }, 120_000);
  afterAll(async () => {
    await withTraces?.stop();
    await withoutTraces?.stop();
  });

  it('by default, shows in the stack-trace query where the run waits', async () => {
    expect(await stackTraceWhileWaiting(withTraces)).toMatch(/at \w+ \(.*src\/workflows\/[\w-]+\.ts:\d+/);
  });

  it('turned off, answers the query without frames, and the run still obeys a kill', async () => {
    const trace = await stackTraceWhileWaiting(withoutTraces);
    expect(trace).not.toMatch(/\bat /);
    expect(trace).not.toMatch(/src\/workflows/);
  });
});
