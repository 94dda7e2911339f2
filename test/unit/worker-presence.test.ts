import { describe, expect, it } from 'vitest';
import { noWorkerFor, runWorkerPresence, unansweredFor, type WorkerPresence } from '../../src/client/worker-presence.js';

const now = Date.parse('2026-11-26T04:00:00Z');
const presence = (over: Partial<WorkerPresence>): WorkerPresence => ({ taskQueue: 'tether', lastPollAt: null, live: false, isDefault: true, ...over });

describe('what a caller is told when no worker can answer for a run', () => {
  it('names the queue, when it was last polled, and the command that serves it', () => {
    const never = noWorkerFor('r1', 'status', presence({}), 'answer', now);
    expect(never.code).toBe('unreachable');
    expect(never.message).toBe(
      'status: no worker polls task queue "tether", which run r1 is on (none has polled it lately), and only a worker can answer for a run that is going on. ' +
        'Start one (`tether worker`): the run goes on from where it stopped',
    );
    const elsewhere = noWorkerFor('r1', 'steer', presence({ taskQueue: 'gpu', isDefault: false, lastPollAt: new Date(now - 3 * 60_000) }), 'apply', now);
    expect(elsewhere.message).toContain('(the last poll was 3 min ago)');
    expect(elsewhere.message).toContain('so the steer message was not sent');
    expect(elsewhere.message).toContain('Start one on that queue (`TETHER_TASK_QUEUE=gpu tether worker`), then send it again');
  });

  it('tells a worker that may have just died from none at all, and says what becomes of a held message', () => {
    const recent = unansweredFor('r1', 'kill', 45_000, presence({ live: true, lastPollAt: new Date(now - 20_000) }), 'It is held. ', now);
    expect(recent.message).toBe(
      'kill: run r1 did not answer within 45 s. A worker polled its task queue "tether" 20 s ago but took none of the run\'s tasks: ' +
        'it may have just stopped or died, or be too busy. It is held. Try again shortly, or start one (`tether worker`)',
    );
    // A server that would not say who polls is taken to have a worker, of whom nothing is known.
    const unknown = unansweredFor('r1', 'status', 10_000, presence({ live: true }), '', now);
    expect(unknown.message).toBe(
      'status: run r1 did not answer within 10 s. No worker took its task on task queue "tether": it may have just stopped or died, or be too busy. Try again shortly, or start one (`tether worker`)',
    );
    const none = unansweredFor('r1', 'status', 10_000, presence({ lastPollAt: new Date(now - 2 * 3600_000) }), '', now);
    expect(none.message).toBe(
      'status: run r1 did not answer within 10 s: no worker polls its task queue "tether" (the last poll was 2 h ago). Start one (`tether worker`): the run goes on from where it stopped',
    );
  });
});

/** A server whose answers to "who polls the queue" are `answers`, one a call (the last one repeated): the poll times in seconds. */
function queueReader(answers: Array<number | null>) {
  let calls = 0;
  const describeTaskQueue = async () => {
    const at = answers[Math.min(calls++, answers.length - 1)];
    return { pollers: at === null ? [] : [{ lastAccessTime: { seconds: at } }] };
  };
  return { reader: { client: { workflowService: { describeTaskQueue } } as never, namespace: 'default', taskQueue: 'tether' }, calls: () => calls };
}

describe("who polls a run's queue", () => {
  const seconds = () => Math.floor(Date.now() / 1000);

  it('waits for the worker of a run some worker took when the server knows of no poller (it restarted), and not otherwise', async () => {
    const restarted = queueReader([null, null, seconds()]);
    expect(await runWorkerPresence(restarted.reader, { taskQueue: 'tether', historyLength: 12 })).toMatchObject({ live: true });
    expect(restarted.calls()).toBe(3);

    const neverTaken = queueReader([null, seconds()]);
    expect(await runWorkerPresence(neverTaken.reader, { taskQueue: 'tether', historyLength: 2 })).toMatchObject({ live: false, lastPollAt: null });
    expect(neverTaken.calls()).toBe(1);

    const died = queueReader([seconds() - 600, seconds()]);
    expect(await runWorkerPresence(died.reader, { taskQueue: 'tether', historyLength: 12 })).toMatchObject({ live: false });
    expect(died.calls()).toBe(1);
  });
});
