import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectTether, controlRun, getStatus, getTranscript, startRun, type TetherClient } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { createTetherWorker } from '../src/worker.js';
import pino from 'pino';
import { startChildWorker } from './helpers/child-worker.js';
import { startCli } from './helpers/cli-process.js';
import { eventually } from './helpers/eventually.js';
import { workflowBundle } from './helpers/harness.js';

const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });

const scripts: Record<string, Script> = {
  'crash-mid-tool': {
    steps: [
      call('shell', { command: 'echo start >> log.txt; sleep 6; echo end >> log.txt' }),
      call('write_file', { path: 'after.txt', content: 'the run went on' }),
      call('finish', { summary: 'survived the crash' }),
    ],
  } as Script,
  'outlives-server': { steps: [call('shell', { command: 'sleep 3; echo slept > slept.txt' }), call('finish', { summary: 'outlived the server' })] } as Script,
  'outlives-outage': {
    steps: [
      call('shell', { command: 'sleep 2; echo before > before.txt' }),
      call('write_file', { path: 'after.txt', content: 'the server came back' }),
      call('finish', { summary: 'outlived the outage' }),
    ],
  } as Script,
  'interrupted-in-outage': {
    steps: [call('shell', { command: 'sleep 2; echo before > before.txt' }), call('finish', { summary: 'went on without its follower' })],
  } as Script,
  'finishes-in-outage': {
    steps: [
      call('shell', { command: 'echo start >> log.txt; sleep 4; echo end >> log.txt; echo the-command-output' }),
      call('finish', { summary: 'kept what the command said' }),
    ],
  } as Script,
  'approved-after-restart': {
    steps: [
      call('write_file', { path: 'before.txt', content: 'written before the restart' }),
      call('shell', { command: 'echo approved-and-ran >> approved.txt; cat before.txt approved.txt' }),
      call('finish', { summary: 'ran what was approved' }),
    ],
  } as Script,
  'dies-while-thinking': {
    steps: [
      call('write_file', { path: 'before.txt', content: 'written before the crash' }),
      { ...call('shell', { command: 'echo ran-once >> after.txt; cat before.txt after.txt' }), delayMs: 4_000 },
      call('finish', { summary: 'went on after the crash' }),
    ],
  } as Script,
  'graceful-shutdown': {
    steps: [call('shell', { command: 'echo started > started.txt; sleep 2; echo finished > graceful.txt' }), call('finish', { summary: 'drained' })],
  } as Script,
};

let scripted: ScriptedServer;
beforeAll(async () => {
  scripted = await startScriptedServer({ port: 0, scripts });
});
afterAll(async () => scripted?.close());

async function waitForFile(file: string, text: string): Promise<void> {
  await eventually(
    `${file} to contain "${text}"`,
    () => readFile(file, 'utf8'),
    (content) => content.includes(text),
  );
}

interface Restarted {
  tc: TetherClient;
  runId: string;
  /** The workers' workspace root (TETHER_TEST_WORKSPACES): the same disk for both. */
  root: string;
}

/**
 * A run on a child worker that is SIGKILLed once `beforeKill` has seen what it
 * waits for, then a second worker on the same queue and disk, as a machine
 * restarted: `afterRestart` checks what became of the run, given what
 * `beforeKill` saw. Both workers are gone when it returns.
 */
async function acrossWorkerRestart<Seen>(test: {
  name: string;
  env?: Record<string, string>;
  spec: (root: string) => Record<string, unknown>;
  beforeKill: (run: Restarted) => Promise<Seen>;
  afterRestart: (run: Restarted, seen: Seen) => Promise<void>;
}): Promise<void> {
  const address = inject('temporalAddress');
  const taskQueue = `${test.name}-${Date.now()}`;
  const root = await mkdtemp(path.join(os.tmpdir(), `tether-${test.name}-`));
  const env = { TEMPORAL_ADDRESS: address, TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url, TETHER_TEST_WORKSPACES: root, ...test.env };
  const first = await startChildWorker(env);
  const tc = await connectTether({ address, taskQueue });
  try {
    const { runId } = await startRun(tc, test.spec(root), { id: `${test.name}-${Date.now()}` });
    const seen = await test.beforeKill({ tc, runId, root });
    first.kill('SIGKILL');
    const second = await startChildWorker(env);
    try {
      await test.afterRestart({ tc, runId, root }, seen);
    } finally {
      second.kill('SIGTERM');
    }
  } finally {
    first.kill('SIGKILL');
    await tc.close();
  }
}

describe('durability', () => {
  it('finishes a run on a new worker after the first is SIGKILLed mid-tool, running each step once', async () => {
    // The replacement worker sees the same disk, as with shared storage: the tool's retry reaches it.
    await acrossWorkerRestart({
      name: 'crash',
      env: { TETHER_SHARED_WORKSPACES: '1' },
      spec: (root) => ({ goal: 'crash', model: 'scripted:crash-mid-tool', workspace: root, critic: { policy: 'off' } }),
      beforeKill: ({ root }) => waitForFile(path.join(root, 'log.txt'), 'start'),
      afterRestart: async ({ tc, runId, root }) => {
        const result = await waitForResult(tc, runId);
        expect(result).toMatchObject({ status: 'completed', summary: 'survived the crash', steps: 3 });
        expect((await readFile(path.join(root, 'log.txt'), 'utf8')).match(/start/g)).toHaveLength(1);
        expect(await readFile(path.join(root, 'after.txt'), 'utf8')).toBe('the run went on');
        const transcript = await getTranscript(tc, runId);
        const notice = transcript.find((m) => m.role === 'tool' && m.toolName === 'shell');
        expect(notice?.content).toMatch(/interrupted: the worker running this command stopped/);
        expect(scripted.requestsFor(runId).map((r) => r.step)).toEqual([0, 1, 2]);
      },
    });
  });

  it('resumes a run after the Temporal server restarts on the same database', async () => {
    const own = await ownServerAndWorker('restart');
    try {
      let tc = await connectTether({ address: own.server.address, taskQueue: own.taskQueue });
      const { runId } = await startRun(
        tc,
        { goal: 'outlive', model: 'scripted:outlives-server', workspace: own.dir, critic: { policy: 'off' } },
        { id: `restart-${Date.now()}` },
      );
      await eventually('the model call to reach the provider', () => scripted.requestsFor(runId).length);
      await tc.close();
      await own.server.stop();
      // The server stays down a while, as the tool goes on running.
      await sleep(1_000);
      await own.startServerAgain();
      tc = await connectTether({ address: own.server.address, taskQueue: own.taskQueue });
      const result = await waitForResult(tc, runId);
      expect(result).toMatchObject({ status: 'completed', summary: 'outlived the server' });
      expect(await readFile(path.join(own.dir, 'slept.txt'), 'utf8')).toBe('slept\n');
      await tc.close();
    } finally {
      await own.stop();
    }
  });

  it("gives the model a command's own result when it finished while the server was away past its heartbeat timeout", async () => {
    const own = await ownServerAndWorker('outage-result');
    try {
      let tc = await connectTether({ address: own.server.address, taskQueue: own.taskQueue });
      const { runId } = await startRun(
        tc,
        { goal: 'outlive', model: 'scripted:finishes-in-outage', workspace: own.dir, critic: { policy: 'off' } },
        { id: `outage-result-${Date.now()}` },
      );
      await waitForFile(path.join(own.dir, 'log.txt'), 'start');
      await tc.close();
      await own.server.stop();
      // Down past the call's 10 s heartbeat timeout: once back, the server gives up on the attempt and sends the call again.
      await waitForFile(path.join(own.dir, 'log.txt'), 'end');
      await sleep(12_000);
      await own.startServerAgain();
      tc = await connectTether({ address: own.server.address, taskQueue: own.taskQueue });
      expect(await waitForResult(tc, runId)).toMatchObject({ status: 'completed', summary: 'kept what the command said' });
      expect(await readFile(path.join(own.dir, 'log.txt'), 'utf8')).toBe('start\nend\n');
      const tool = (await getTranscript(tc, runId)).find((m) => m.role === 'tool');
      const content = tool && 'content' in tool ? String(tool.content) : '';
      expect(content).toContain('the-command-output');
      expect(content).not.toContain('interrupted');
      await tc.close();
    } finally {
      await own.stop();
    }
  }, 120_000);

  it('keeps `tether run --wait` following a run while its server is away longer than the client retries, and to its end', async () => {
    const own = await ownServerAndWorker('outage');
    const env = { ...process.env, TEMPORAL_ADDRESS: own.server.address, TETHER_TASK_QUEUE: own.taskQueue };
    const cli = startCli(['run', '--model', 'scripted:outlives-outage', '--workspace', own.dir, '--critic', 'off', '--wait', 'outlive the outage'], { env });
    try {
      await eventually('the first model call', () => scripted.requests.filter((r) => r.model === 'outlives-outage').length);
      await own.server.stop();
      // The client retries a call for ~20 s before it gives up; the follower must outwait that, and say why it waits.
      await cli.waitFor('the Temporal server does not answer; the run goes on once it is back. Still waiting for the run', 60_000);
      await own.startServerAgain();
      expect(await cli.exited, cli.output()).toBe(0);
      expect(cli.output()).toMatch(/status: +completed/);
      expect(cli.output()).toContain('outlived the outage');
      expect(await readFile(path.join(own.dir, 'after.txt'), 'utf8')).toBe('the server came back');
    } finally {
      cli.child.kill('SIGKILL');
      await own.stop();
    }
  }, 180_000);

  it('on Ctrl-C while the server is away, says `tether run --wait` could not cancel the run, and the run goes on once the server is back', async () => {
    const own = await ownServerAndWorker('interrupted-outage');
    const runId = `interrupted-outage-${Date.now()}`;
    const env = { ...process.env, TEMPORAL_ADDRESS: own.server.address, TETHER_TASK_QUEUE: own.taskQueue };
    const args = [
      'run',
      '--id',
      runId,
      '--model',
      'scripted:interrupted-in-outage',
      '--workspace',
      own.dir,
      '--critic',
      'off',
      '--wait',
      '--output',
      'stream-json',
      'go on',
    ];
    const cli = startCli(args, { env });
    try {
      await eventually('the first model call', () => scripted.requests.filter((r) => r.model === 'interrupted-in-outage').length);
      await own.server.stop();
      cli.child.kill('SIGINT');
      expect(await cli.exited, cli.output()).toBe(11);
      expect(cli.output()).toContain(`the Temporal server does not answer, so run ${runId} was not cancelled: it goes on once the server is back`);
      expect(cli.output().trimEnd().split('\n').at(-1)).toBe(JSON.stringify({ type: 'follow_ended', runId, state: 'running', detached: true }));
      await own.startServerAgain();
      const tc = await connectTether({ address: own.server.address, taskQueue: own.taskQueue });
      try {
        expect(await waitForResult(tc, runId)).toMatchObject({ status: 'completed', summary: 'went on without its follower' });
      } finally {
        await tc.close();
      }
    } finally {
      cli.child.kill('SIGKILL');
      await own.stop();
    }
  }, 180_000);

  it('runs a call approved after the worker holding the run restarted, once, on the new worker, and says the run moved', async () => {
    // Workspaces bound to their worker; the replacement is the same machine restarted, so it sees the same disk.
    await acrossWorkerRestart({
      name: 'approve-restart',
      spec: () => ({
        goal: 'approve',
        model: 'scripted:approved-after-restart',
        critic: { policy: 'off' },
        approvals: [{ tool: 'shell', match: 'approved' }],
      }),
      beforeKill: ({ tc, runId }) =>
        eventually(
          'the shell call to wait for approval',
          () => getStatus(tc, runId),
          (s) => s.pendingToolCall !== undefined,
        ),
      afterRestart: async ({ tc, runId, root }, held) => {
        await controlRun(tc, runId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'approve' });
        expect(await waitForResult(tc, runId)).toMatchObject({ status: 'completed', summary: 'ran what was approved' });
        expect(await readFile(path.join(root, runId, 'approved.txt'), 'utf8')).toBe('approved-and-ran\n');
        const shell = (await getTranscript(tc, runId)).find((m) => m.role === 'tool' && m.toolName === 'shell');
        expect(shell).toMatchObject({ success: true });
        expect(shell?.content).toMatch(/worker that held this run's workspace is gone; nothing of this run was running there/);
        expect(shell?.content).toMatch(/written before the restartapproved-and-ran/);
        expect(shell?.content).not.toMatch(/may have started/);
      },
    });
  });

  it('runs the tool call a model asked for while its worker died on the new worker, once, instead of calling it lost', async () => {
    await acrossWorkerRestart({
      name: 'thinking',
      spec: () => ({ goal: 'think', model: 'scripted:dies-while-thinking', critic: { policy: 'off' } }),
      // The second model call is under way (its reply takes 4 s) when the worker holding the workspace dies.
      beforeKill: ({ runId }) =>
        eventually(
          'the second model call',
          () => scripted.requestsFor(runId).length,
          (n) => n >= 2,
        ),
      afterRestart: async ({ tc, runId, root }) => {
        expect(await waitForResult(tc, runId)).toMatchObject({ status: 'completed', summary: 'went on after the crash' });
        expect(await readFile(path.join(root, runId, 'after.txt'), 'utf8')).toBe('ran-once\n');
        const shell = (await getTranscript(tc, runId)).find((m) => m.role === 'tool' && m.toolName === 'shell');
        expect(shell).toMatchObject({ success: true });
        expect(shell?.content).toMatch(/nothing of this run was running there/);
        expect(shell?.content).toMatch(/written before the crashran-once/);
      },
    });
  }, 120_000);

  it('lets an in-flight tool finish when the worker gets SIGTERM, and loses nothing', async () => {
    const address = inject('temporalAddress');
    const taskQueue = `sigterm-${Date.now()}`;
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-sigterm-'));
    const env = {
      TEMPORAL_ADDRESS: address,
      TETHER_TASK_QUEUE: taskQueue,
      TETHER_SCRIPTED_URL: scripted.url,
      TETHER_TEST_WORKSPACES: workspace,
      TETHER_TEST_GRACE_MS: '10000',
      TETHER_SHARED_WORKSPACES: '1',
    };
    const first = await startChildWorker(env);
    const tc = await connectTether({ address, taskQueue });
    try {
      const { runId } = await startRun(
        tc,
        { goal: 'drain', model: 'scripted:graceful-shutdown', workspace, critic: { policy: 'off' } },
        { id: `sigterm-${Date.now()}` },
      );
      // The tool is running when the worker is told to stop.
      await waitForFile(path.join(workspace, 'started.txt'), 'started');
      first.kill('SIGTERM');
      const code = await new Promise((resolve) => first.once('exit', resolve));
      expect(code).toBe(0);
      expect(await readFile(path.join(workspace, 'graceful.txt'), 'utf8')).toBe('finished\n');
      const second = await startChildWorker(env);
      try {
        expect(await waitForResult(tc, runId)).toMatchObject({ status: 'completed', summary: 'drained' });
        const transcript = await getTranscript(tc, runId);
        expect(transcript.find((m) => m.role === 'tool')).toMatchObject({ success: true });
      } finally {
        second.kill('SIGTERM');
      }
    } finally {
      first.kill('SIGKILL');
      await tc.close();
    }
  });
});

/** A dev server of the test's own on a file database, and a worker on it: the server can stop and start again on the same database. */
async function ownServerAndWorker(name: string) {
  const dir = await mkdtemp(path.join(os.tmpdir(), `tether-${name}-`));
  const port = await freePort();
  const db = path.join(dir, 'temporal.db');
  let server = await startDevServer({ port, db, headless: true });
  const taskQueue = `${name}-${Date.now()}`;
  const { worker, connection } = await createTetherWorker({
    address: server.address,
    taskQueue,
    workflowBundle: await workflowBundle(),
    scriptedUrl: scripted.url,
    workspaceRoot: dir,
    logger: pino({ level: 'silent' }),
  });
  const running = worker.run();
  return {
    dir,
    taskQueue,
    get server() {
      return server;
    },
    async startServerAgain() {
      server = await startDevServer({ port, db, headless: true });
    },
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
      await server.stop();
    },
  };
}
