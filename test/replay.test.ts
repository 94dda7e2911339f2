import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { createTetherMetrics } from '../src/ops/metrics.js';
import { workflowSinks } from '../src/ops/sinks.js';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundleOptions } from '../src/worker.js';
import { quietBundlerLogger, workflowBundle } from './helpers/harness.js';

const DIR = fileURLToPath(new URL('./fixtures/histories/', import.meta.url));
const fixtures = (await readdir(DIR)).filter((f) => f.endsWith('.json')).sort();

// Histories recorded from real runs (scripts/record-histories.ts). A workflow
// change that would break runs already in flight fails here: guard it with patched().
describe('replaying recorded histories with the current workflow code', () => {
  it('has fixtures to replay', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(8);
  });

  for (const file of fixtures) {
    it(`replays ${file} without nondeterminism`, async () => {
      const history = historyFromJSON(JSON.parse(await readFile(DIR + file, 'utf8')));
      // The worker's real sinks: a replay must resolve them, and they must not count replayed events.
      await Worker.runReplayHistory(
        { workflowBundle: await workflowBundle(), sinks: workflowSinks(createTetherMetrics().sinks) },
        history,
        file.replace(/\.json$/, ''),
      );
    });
  }

  // A query that reaches a worker while the run has no sticky worker (after a server restart) can make the SDK
  // apply an activity's result with the previous task's time; the replay then reads a later one. The commands
  // must not follow the clock: the same history with its tasks further apart replays without nondeterminism.
  it('replays a run with a critic whatever its clock read between tasks', async () => {
    const recorded = JSON.parse(await readFile(`${DIR}work-clock-critic.json`, 'utf8')) as { events: { eventId: string; eventTime: string }[] };
    const later = (e: { eventId: string; eventTime: string }) => new Date(Date.parse(e.eventTime) + 60 * Number(e.eventId)).toISOString();
    const stretched = { ...recorded, events: recorded.events.map((e) => ({ ...e, eventTime: later(e) })) };
    await Worker.runReplayHistory(
      { workflowBundle: await workflowBundle(), sinks: workflowSinks(createTetherMetrics().sinks) },
      historyFromJSON(stretched),
      'work-clock-critic',
    );
  });

  // The OpenTelemetry workflow interceptors answer an Update a few steps later than the bare handler. A run started
  // now takes them on every worker, so it replays on a worker that exports traces as on one that does not; a run
  // recorded before takes them only on a worker that exports traces, as it always did.
  describe('on a worker that exports traces', () => {
    const tracedBundle = bundleWorkflowCode({ ...workflowBundleOptions({ stackTraces: true, traces: true }), logger: quietBundlerLogger });
    const replay = async (name: string) =>
      Worker.runReplayHistory(
        { workflowBundle: await tracedBundle, sinks: workflowSinks(createTetherMetrics().sinks) },
        historyFromJSON(JSON.parse(await readFile(`${DIR}${name}.json`, 'utf8'))),
        name,
      );

    for (const name of ['alike-approvals', 'alike-refused-then-approved', 'alike-fails-then-clear', 'alike-steer-extend', 'alike-asks']) {
      it(`replays ${name}, recorded by a worker that exports none`, async () => {
        await replay(name);
      });
    }

    it('replays a run recorded before every bundle had the interceptors as a worker that exports traces recorded it', async () => {
      await expect(replay('lean-approvals')).rejects.toThrow(/WorkflowExecutionUpdateCompleted/);
    });
  });
});
