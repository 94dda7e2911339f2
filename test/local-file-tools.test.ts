import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { NativeConnection, Worker } from '@temporalio/worker';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities, type ActivityDeps } from '../src/activities/index.js';
import { connectTether, getTranscript, startRun } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { readChain } from '../src/history/fetch.js';
import { readRunHistory } from '../src/history/run-history.js';
import { stepsOf } from '../src/history/steps.js';
import { PriceTable } from '../src/llm/pricing.js';
import { TranscriptCache } from '../src/llm/transcript-cache.js';
import { CHECKPOINT_FILE_CAP_BYTES } from '../src/tools/checkpoint.js';
import { descendants } from '../src/tools/process-tree.js';
import { createTetherMetrics } from '../src/ops/metrics.js';
import { workflowSinks } from '../src/ops/sinks.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startChildWorker } from './helpers/child-worker.js';
import { eventually } from './helpers/eventually.js';
import { workflowBundle, startHarness, type Harness } from './helpers/harness.js';
import { eventType, historyEvents } from './helpers/history.js';

const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });

const scripts: Record<string, Script> = {
  'files-then-shell': {
    steps: [
      call('write_file', { path: 'a.txt', content: 'written here' }),
      call('read_file', { path: 'a.txt' }),
      call('shell', { command: 'cat a.txt' }),
      call('finish', { summary: 'done' }),
    ],
  } as Script,
  'writes-then-shell': {
    steps: [
      call('write_file', { path: 'a.txt', content: 'written here' }),
      call('write_file', { path: 'b.txt', content: 'then here' }),
      call('read_file', { path: 'a.txt' }),
      call('shell', { command: 'cat a.txt' }),
      call('finish', { summary: 'done' }),
    ],
  } as Script,
  'write-then-finish': { steps: [call('write_file', { path: 'written.txt', content: 'once' }), call('finish', { summary: 'went on' })] } as Script,
  'writes-slowly': {
    steps: [
      call('write_file', { path: 'first.txt', content: 'baseline taken' }),
      { ...call('write_file', { path: 'written.txt', content: 'once' }), delayMs: 3_000 },
      call('finish', { summary: 'went on' }),
    ],
  } as Script,
};

type Events = Awaited<ReturnType<typeof historyEvents>>;

/** The activity types the run scheduled (ordinary activities only). */
const scheduled = (events: Events) =>
  events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
/** What each file tool's local activity marker says: its type and whether it ran the call here. */
function localRuns(events: Events): Array<{ type: string; ran: boolean }> {
  return events.flatMap((e) => {
    const a = e.markerRecordedEventAttributes;
    if (a?.markerName !== 'core_local_activity') return [];
    const data = JSON.parse(Buffer.from(a!.details!.data!.payloads![0]!.data!).toString());
    // The run's workspace claim is a local activity too; these tests are about the file tools.
    if (data.activity_type === 'claimWorkspace') return [];
    const result = a!.details?.result?.payloads?.[0]?.data;
    return [{ type: data.activity_type, ran: result ? 'ran' in JSON.parse(Buffer.from(result).toString()) : false }];
  });
}

let scripted: ScriptedServer;
beforeAll(async () => {
  scripted = await startScriptedServer({ port: 0, scripts });
});
afterAll(async () => scripted?.close());

describe('file tools as local activities', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ scripts, worker: { scriptedUrl: scripted.url, sharedWorkspaces: false } });
  });
  afterAll(async () => h?.stop());

  it('runs read_file and write_file on the worker holding a bound run as markers, shell as an activity, and history shows each call', async () => {
    const runId = await h.start({ goal: 'g', model: 'scripted:writes-then-shell', critic: { policy: 'off' } });
    expect((await h.result(runId)).status).toBe('completed');
    const events = await historyEvents(h.tc.client.workflow.getHandle(runId));
    expect(events.map(eventType)).toContain('EVENT_TYPE_MARKER_RECORDED');
    expect(localRuns(events)).toEqual([
      { type: 'runFileToolHere', ran: true },
      { type: 'runFileToolHere', ran: true },
      { type: 'runFileToolHere', ran: true },
    ]);
    expect(scheduled(events).filter((t) => t === 'runTool')).toHaveLength(1);
    const tools = (await getTranscript(h.tc, runId)).filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.content)).toEqual(['wrote 12 bytes to a.txt', 'wrote 9 bytes to b.txt', 'written here', 'written here', 'Run finished.']);
    const steps = stepsOf(readRunHistory(runId, await readChain(h.tc.client, runId))).filter((s) => s.kind === 'tool');
    expect(steps.map((s) => s.kind === 'tool' && [s.tool, s.ok, s.outcome])).toEqual([
      ['write_file', true, 'completed'],
      ['write_file', true, 'completed'],
      ['read_file', true, 'completed'],
      ['shell', true, 'completed'],
    ]);
  });

  it("leaves a large workspace's first write to the tool activity, whose baseline checkpoint a kill can cut short, and runs later writes here", async () => {
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-large-'));
    // One sparse 1 GB file: a workspace this large by its files' sizes may take seconds to baseline (a local activity would hold the run).
    await run('truncate', ['-s', '1G', path.join(workspace, 'big.bin')]);
    const runId = await h.start({ goal: 'g', model: 'scripted:writes-slowly', workspace, critic: { policy: 'off' } });
    expect((await h.result(runId)).status).toBe('completed');
    const events = await historyEvents(h.tc.client.workflow.getHandle(runId));
    expect(localRuns(events)).toEqual([
      { type: 'runFileToolHere', ran: false },
      { type: 'runFileToolHere', ran: true },
    ]);
    expect(scheduled(events).filter((t) => t === 'runTool')).toHaveLength(1);
  }, 180_000);
});

describe('a file tool on a worker that does not hold the workspace', () => {
  const taskQueue = `elsewhere-${Date.now()}`;
  const holderQueue = `${taskQueue}@holder`;
  let connection: NativeConnection;
  let workers: Worker[] = [];
  let running: Promise<unknown>;
  let root: string;

  beforeAll(async () => {
    connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    root = await mkdtemp(path.join(os.tmpdir(), 'tether-elsewhere-'));
    const deps = (workspaceQueue: string): ActivityDeps => ({
      env: process.env,
      workspaceRoot: root,
      checkpointRoot: path.join(root, '.checkpoints'),
      scriptedUrl: async () => scripted.url,
      prices: new PriceTable(),
      transcripts: new TranscriptCache(),
      logger: pino({ level: 'silent' }),
      workspaceQueue,
    });
    // The workflow's worker binds runs to the holder's queue but is not the holder: every file tool is "not here".
    const host = { ...createActivities(deps(`${taskQueue}@host`)), claimWorkspace: async () => ({ taskQueue: holderQueue }) };
    workers = [
      await Worker.create({
        connection,
        taskQueue,
        workflowBundle: await workflowBundle(),
        activities: host,
        sinks: workflowSinks(createTetherMetrics().sinks),
      }),
      await Worker.create({ connection, taskQueue: holderQueue, activities: createActivities(deps(holderQueue)) }),
    ];
    running = Promise.all(workers.map((w) => w.run()));
  });
  afterAll(async () => {
    for (const w of workers) w.shutdown();
    await running?.catch(() => undefined);
    await connection?.close();
  });

  it('falls back to the tool activity on the holder', async () => {
    const tc = await connectTether({ address: inject('temporalAddress'), taskQueue });
    try {
      const { runId } = await startRun(tc, { goal: 'g', model: 'scripted:files-then-shell', critic: { policy: 'off' } }, { id: `elsewhere-${Date.now()}` });
      expect((await waitForResult(tc, runId)).status).toBe('completed');
      const events = await historyEvents(tc.client.workflow.getHandle(runId));
      expect(localRuns(events)).toEqual([
        { type: 'runFileToolHere', ran: false },
        { type: 'runFileToolHere', ran: false },
      ]);
      expect(scheduled(events).filter((t) => t === 'runTool')).toHaveLength(3);
      expect(await readFile(path.join(root, runId, 'a.txt'), 'utf8')).toBe('written here');
      const tools = (await getTranscript(tc, runId)).filter((m) => m.role === 'tool');
      expect(tools[1]?.content).toContain('written here');
      const steps = stepsOf(readRunHistory(runId, await readChain(tc.client, runId))).filter((s) => s.kind === 'tool');
      expect(steps.map((s) => s.kind === 'tool' && s.tool)).toEqual(['write_file', 'read_file', 'shell']);
    } finally {
      await tc.close();
    }
  });
});

const run = promisify(execFile);

/** Whether `pid` has a `git add` among its descendants (the checkpoint runner starts it): the write's workspace checkpoint is being taken. */
function checkpointing(pid: number): boolean {
  return descendants(pid).some((child) => {
    try {
      return /\bgit\b.*\badd\b/.test(readFileSync(`/proc/${child}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      return false;
    }
  });
}

describe('a worker killed during a local write_file', () => {
  it('gives the model the interruption notice, and the write is not run again blindly', async () => {
    const address = inject('temporalAddress');
    const taskQueue = `local-crash-${Date.now()}`;
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-local-crash-'));
    await writeFile(path.join(workspace, 'keep.txt'), 'here before');
    const env = (name: string) => ({
      TEMPORAL_ADDRESS: address,
      TETHER_TASK_QUEUE: taskQueue,
      TETHER_SCRIPTED_URL: scripted.url,
      TETHER_HOME: workspace.replace(/$/, `-${name}-home`),
      TETHER_TEST_WORKSPACES: workspace.replace(/$/, `-${name}-root`),
    });
    const first = await startChildWorker(env('first'));
    const tc = await connectTether({ address, taskQueue });
    let second: Awaited<ReturnType<typeof startChildWorker>> | undefined;
    try {
      const { runId } = await startRun(tc, { goal: 'g', model: 'scripted:writes-slowly', workspace, critic: { policy: 'off' } }, { id: taskQueue });
      await eventually('the first write (and its checkpoints) to be done', async () =>
        (await getTranscript(tc, runId)).some((m) => m.role === 'tool' && m.toolName === 'write_file'),
      );
      // A big file new since the baseline (random, so git must hash and compress all of it; under the checkpoints' size cap, so
      // they take it) makes the next write's checkpoint take a second or more: the kill lands inside the local activity.
      await writeFile(path.join(workspace, 'big.bin'), randomBytes(CHECKPOINT_FILE_CAP_BYTES - 2 ** 20));
      await eventually('the local write_file to be checkpointing', () => checkpointing(first.pid!), Boolean, { timeoutMs: 60_000, intervalMs: 20 });
      first.kill('SIGKILL');
      second = await startChildWorker(env('second'));
      const result = await waitForResult(tc, runId);
      expect(result).toMatchObject({ status: 'completed', summary: 'went on' });
      const writes = (await getTranscript(tc, runId)).filter((m) => m.role === 'tool' && m.toolName === 'write_file');
      expect(writes.map((m) => m.content)).toEqual(['wrote 14 bytes to first.txt', expect.stringMatching(/worker that held this run's workspace is gone/)]);
      const events = await historyEvents(tc.client.workflow.getHandle(runId));
      // The first write ran here; so did the second, and its marker was lost with the worker: the new worker is not
      // here, so the call is not run again, and the model reads the notice.
      expect(localRuns(events)).toEqual([
        { type: 'runFileToolHere', ran: true },
        { type: 'runFileToolHere', ran: false },
      ]);
      expect(scheduled(events).filter((t) => t === 'runTool')).toHaveLength(1);
    } finally {
      first.kill('SIGKILL');
      second?.kill('SIGTERM');
      await tc.close();
    }
  }, 180_000);
});
