import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { createTetherMetrics } from '../src/ops/metrics.js';
import { metricsSinks } from '../src/ops/sinks.js';
import { workflowBundle } from './helpers/harness.js';

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
        { workflowBundle: await workflowBundle(), sinks: metricsSinks(createTetherMetrics().sinks) },
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
      { workflowBundle: await workflowBundle(), sinks: metricsSinks(createTetherMetrics().sinks) },
      historyFromJSON(stretched),
      'work-clock-critic',
    );
  });
});
