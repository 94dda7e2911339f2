import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '@temporalio/client';
import { STICKY_QUEUE_TIMEOUT_MS } from '../src/api/settings.js';
import { answeredQuery, getStatus, startRun, TetherError } from '../src/client/runs.js';
import { type Panel, startPanel } from '../src/panel/server.js';
import type { Script } from '../src/scripted/script.js';
import { startCli } from './helpers/cli-process.js';
import { eventually } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { eventTypes } from './helpers/history.js';

/*
 * A run on a task queue that no worker polls (its worker died, or none was
 * started): queries and Updates need a worker, so the CLI must say so and
 * send nothing rather than hang, and `run --wait` must wait for a worker
 * rather than give up on a run that goes on when one comes.
 */

const scripts: Record<string, Script> = {
  quick: { steps: [{ reply: { toolCalls: [{ name: 'finish', args: { summary: 'done once a worker came' } }] } }] } as Script,
};
const spec = { goal: 'wait for a worker', model: 'scripted:quick', critic: { policy: 'off' as const } };

/** How long the CLI's status query waits for an answer: the server's sticky window, and 5 s. */
const CLI_QUERY_MS = STICKY_QUEUE_TIMEOUT_MS + 5_000;
const TOKEN = 'no-worker-panel-token-0123456789';
let h: Harness;
let panel: Panel;
const late: Harness[] = [];
beforeAll(async () => {
  h = await startHarness({ scripts });
  panel = await startPanel({ client: h.tc, port: 0, token: TOKEN });
});
afterAll(async () => {
  await panel?.close();
  for (const worker of late) await worker.stop();
  await h?.stop();
});
const api = (p: string, body?: unknown) =>
  fetch(`${panel.url}api/${p}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

const cliEnv = (taskQueue: string) => ({ ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: taskQueue });
const lastJson = (out: string) => JSON.parse(out.trim().split('\n').pop()!);

describe('a run no worker polls for', () => {
  it('status, fork, steer and kill, from the CLI and the panel, say so at once, name the queue and how to serve it, and send nothing', async () => {
    const queue = `nobody-${Date.now()}`;
    const { runId } = await startRun(h.tc, spec, { id: `no-worker-${Date.now()}`, taskQueue: queue });
    // The CLI's own default queue is another one: the advice names the run's.
    const env = cliEnv(h.taskQueue);
    try {
      for (const [verb, ...args] of [['status'], ['fork', '--at-step', '1'], ['steer', 'are you there?'], ['kill', '--reason', 'stuck']]) {
        const cli = startCli([verb, runId, ...args, '--output', 'json'], { env });
        expect(await cli.exited).toBe(1);
        const { error } = lastJson(cli.output());
        expect(error.code).toBe('unreachable');
        expect(error.message).toContain(`no worker polls task queue "${queue}", which run ${runId} is on`);
        expect(error.message).toContain(`TETHER_TASK_QUEUE=${queue} tether worker`);
        if (verb === 'steer' || verb === 'kill') expect(error.message).toContain(`the ${verb} message was not sent`);
        if (verb === 'kill') expect(error.message).toContain(`\`temporal workflow terminate --workflow-id ${runId} --reason "<why>"\``);
      }
      for (const [path, body] of [[`runs/${runId}`], [`runs/${runId}/steer`, { message: 'are you there?' }]] as const) {
        const answer = await api(path, body);
        expect(answer.status).toBe(503);
        expect((await answer.json()).error).toContain(`no worker polls task queue "${queue}", which run ${runId} is on`);
      }
      const events = await eventTypes(h.tc.client.workflow.getHandle(runId));
      expect(events).toEqual(['EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', 'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED']);
      // What the kill's error offers instead: terminated, the run reads as killed, with the reason.
      await h.tc.client.workflow.getHandle(runId).terminate('no worker left');
      const status = startCli(['status', runId, '--output', 'json'], { env });
      expect(await status.exited).toBe(0);
      expect(lastJson(status.output())).toMatchObject({ runId, state: 'killed', cause: 'terminated: no worker left' });
      const estop = startCli(['estop', 'status', runId, '--output', 'json'], { env });
      expect(await estop.exited, estop.output()).toBe(0);
      expect(lastJson(estop.output())).toMatchObject({ runId, emergency_stop: false, consecutive_errors: 0 });
    } catch (err) {
      await h.tc.client.workflow
        .getHandle(runId)
        .terminate('test cleanup')
        .catch(() => undefined);
      throw err;
    }
  });

  it('run --wait says why it waits, once, keeps waiting, and follows the run to its end once a worker comes', async () => {
    const queue = `later-${Date.now()}`;
    const runId = `no-worker-yet-${Date.now()}`;
    const cli = startCli(['run', '--id', runId, '--model', 'scripted:quick', '--critic', 'off', '--wait', '--output', 'json', 'wait for a worker'], {
      env: cliEnv(queue),
    });
    // Told at the start, and not again when the first status query goes unanswered. The queue came from this
    // command's own environment, which a worker started in another shell does not share: the advice names it.
    const told = `run ${runId} waits: no worker polls task queue "${queue}" (none has polled it lately). It starts when one does: start one on that queue (\`TETHER_TASK_QUEUE=${queue} tether worker\`)`;
    await cli.waitFor(told);
    // The CLI sends its first status query after the notice, once it has loaded what following needs: on a loaded
    // machine, after ours. The worker may come only once the CLI's query has gone unanswered (one that came sooner
    // would answer it), so ours waits 10 s longer than the CLI's: the CLI's query has timed out by the time ours has.
    await expect(getStatus(h.tc, runId, CLI_QUERY_MS + 10_000)).rejects.toThrow(`status: run ${runId} did not answer within`);
    late.push(await startHarness({ scripts, worker: { taskQueue: queue } }));
    expect({ code: await cli.exited, out: cli.output() }).toMatchObject({ code: 0 });
    // It says the run answers again only after a query went unanswered: the wait happened, and was not told twice.
    expect(cli.output()).toContain(`run ${runId} answers again`);
    expect(cli.output().split(told)).toHaveLength(2);
    expect(cli.output()).not.toContain('did not answer');
    expect(lastJson(cli.output())).toMatchObject({ runId, status: 'completed', summary: 'done once a worker came' });
  });

  it('run --wait stopped by SIGTERM with no worker records the cancel and exits 11, rather than wait for a worker', async () => {
    const queue = `never-${Date.now()}`;
    const runId = `no-worker-term-${Date.now()}`;
    const cli = startCli(['run', '--id', runId, '--model', 'scripted:quick', '--critic', 'off', '--wait', '--output', 'json', 'wait for a worker'], {
      env: cliEnv(queue),
    });
    await cli.waitFor(`run ${runId} waits: no worker polls task queue "${queue}"`);
    cli.child.kill('SIGTERM');
    expect({ code: await cli.exited, out: cli.output() }).toMatchObject({ code: 11 });
    expect(cli.output()).toContain(`the cancel of run ${runId} is recorded, but no worker polls its queue to carry it out`);
    expect(lastJson(cli.output())).toEqual({ runId, state: 'running', cancelRequested: true });
    // Recorded: the first worker to come ends the run cancelled.
    late.push(await startHarness({ scripts, worker: { taskQueue: queue } }));
    expect(
      await h.tc.client.workflow
        .getHandle(runId)
        .result()
        .catch((err: Error) => err.name),
    ).toBe('WorkflowFailedError');
    expect((await h.tc.client.workflow.getHandle(runId).describe()).status.name).toBe('CANCELLED');
  }, 90_000);

  it('a Ctrl-C while a control verb waits on a worker that just went away says the message may still apply, and how to check', async () => {
    const queue = `gone-${Date.now()}`;
    const worker = await startHarness({
      scripts: { asks: { steps: [{ reply: { toolCalls: [{ name: 'ask_user', args: { question: 'which?' } }] } }] } as Script },
      worker: { taskQueue: queue },
    });
    const { runId } = await startRun(worker.tc, { ...spec, model: 'scripted:asks', tools: ['ask_user'] }, { id: `gone-${Date.now()}`, taskQueue: queue });
    try {
      await eventually(
        `run ${runId} to block on its question`,
        () => getStatus(worker.tc, runId),
        (s) => s.state === 'blocked',
      );
      // Stopped a moment ago, the worker still counts as polling: the Update is sent, and waits for it.
      await worker.stop();
      const cli = startCli(['steer', runId, 'the second one'], { env: cliEnv(queue) });
      // The server holds the Update for a worker: a workflow task is scheduled for it, and nobody takes it.
      await eventually(
        `the steer to reach run ${runId}`,
        async () => (await h.tc.client.workflow.getHandle(runId).describe()).raw.pendingWorkflowTask,
        Boolean,
      );
      cli.child.kill('SIGINT');
      expect({ code: await cli.exited, out: cli.output() }).toMatchObject({ code: 130 });
      expect(cli.output()).toContain(`SIGINT: stopped waiting for run ${runId} to answer the steer message`);
      expect(cli.output()).toContain(`\`tether history ${runId} --audit\` shows whether it did; sending it again could apply it twice`);
    } finally {
      await h.tc.client.workflow
        .getHandle(runId)
        .terminate('test cleanup')
        .catch(() => undefined);
    }
  }, 60_000);

  it('a query cut off with CANCELLED (its worker stopped while it held it), or refused as no poller seen lately, counts as unanswered, not as a failure of the run', async () => {
    const queue = `cut-off-${Date.now()}`;
    const { runId } = await startRun(h.tc, spec, { id: `cut-off-${Date.now()}`, taskQueue: queue });
    try {
      // What the SDK throws when the server cuts the query off: a ServiceError over gRPC's status 1.
      const cutOff = () =>
        Promise.reject(new ServiceError('Failed to query Workflow', { cause: Object.assign(new Error('1 CANCELLED: Call cancelled'), { code: 1 }) }));
      // What the server answers at once to a query for a queue whose worker stopped a moment ago.
      const noPoller = () =>
        Promise.reject(
          new ServiceError('Failed to query Workflow', {
            cause: Object.assign(new Error('9 FAILED_PRECONDITION: no poller seen for task queue recently, worker may be down'), {
              code: 9,
              details: 'no poller seen for task queue recently, worker may be down',
            }),
          }),
        );
      for (const query of [cutOff, noPoller]) {
        const err = await answeredQuery(h.tc, runId, 'status', 1_000, query).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(TetherError);
        expect(err).toMatchObject({
          code: 'unreachable',
          message: expect.stringContaining(`did not answer within 1 s: no worker polls its task queue "${queue}"`),
        });
      }
    } finally {
      await h.tc.client.workflow.getHandle(runId).terminate('test cleanup');
    }
  });
});
