import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPostgres, startPostgres, stopPostgres } from '../../src/cluster/postgres.js';
import { clusterStatus } from '../../src/cluster/status.js';
import { getTranscript, startRun } from '../../src/client/runs.js';
import { waitForResult } from '../../src/client/run-result.js';
import type { Script } from '../../src/scripted/script.js';
import { linesOf, startTestCluster, type TestCluster, until } from './helpers/cluster.js';

const shell = (command: string) => ({ reply: { toolCalls: [{ name: 'shell', args: { command } }] } });
const finish = { reply: { toolCalls: [{ name: 'finish', args: { summary: 'all steps done' } }] } };

// Each step appends a line before and after its work: a step that ran twice shows its "start" twice.
const step = shell('echo start-{{step}} >> log.txt; sleep 2; echo end-{{step}} >> log.txt');
const scripts: Record<string, Script> = { steps: { steps: [{ ...step, repeat: 4 }, finish] } };

const base = { critic: { policy: 'off' as const } };
let cluster: TestCluster;
let counter = 0;

beforeAll(async () => {
  // Failures made by hand, each undone by hand: nothing starts a part again behind the test's back.
  cluster = await startTestCluster(scripts, ['--restart', 'no']);
});
afterAll(async () => {
  await cluster?.down();
});

/** Starts `count` runs and waits until each is in the middle of its first tool. */
async function runsInTools(prefix: string, count: number): Promise<string[]> {
  const ids = await Promise.all(
    Array.from(
      { length: count },
      async () => (await startRun(cluster.tc, { ...base, goal: prefix, model: 'scripted:steps' }, { id: `${prefix}-${Date.now()}-${counter++}` })).runId,
    ),
  );
  for (const runId of ids) {
    await until(`${runId} to be in a tool`, async () => {
      const ws = await cluster.workspaceOf(runId);
      return ws && (await linesOf(path.join(ws.dir, 'log.txt'))).length ? true : undefined;
    });
  }
  return ids;
}

/** Every run completed, and no step's tool ran twice (an interrupted one gets a notice instead). */
async function expectCompletedOnceEach(ids: string[]): Promise<void> {
  const results = await Promise.all(ids.map((runId) => waitForResult(cluster.tc, runId)));
  expect(results.map((r) => r.status)).toEqual(Array(ids.length).fill('completed'));
  for (const runId of ids) {
    const ws = (await cluster.workspaceOf(runId))!;
    const starts = (await linesOf(path.join(ws.dir, 'log.txt'))).filter((line) => line.startsWith('start-'));
    expect(new Set(starts).size, `${runId}: ${starts.join(', ')}`).toBe(starts.length);
    const toolResults = (await getTranscript(cluster.tc, runId)).filter((m) => m.role === 'tool' && m.toolName === 'shell');
    expect(toolResults).toHaveLength(4);
  }
}

describe('the cluster when its parts fail', () => {
  it('resumes every run after a fast PostgreSQL shutdown and restart mid-run', async () => {
    const ids = await runsInTools('pg', 6);
    const pg = await findPostgres();
    const { port, dataDir } = cluster.status.postgres!;
    await stopPostgres(pg, dataDir);
    // Long enough for tools to finish and their results to meet a database that is not there.
    await sleep(4_000);
    await startPostgres(pg, dataDir, port, path.join(cluster.dir, 'logs', 'postgres.log'));
    await expectCompletedOnceEach(ids);
  });

  it('completes every run, running no non-idempotent tool twice, when a Temporal node is SIGKILLed mid-tools', async () => {
    const ids = await runsInTools('node', 8);
    const victim = cluster.status.nodes[0];
    process.kill(victim.pid, 'SIGKILL');
    await expectCompletedOnceEach(ids);
    const status = (await clusterStatus(cluster.dir))!;
    expect(status.nodes.map((n) => n.running)).toEqual([false, true]);
  });
});
