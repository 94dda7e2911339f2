import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { DEFAULT_TASK_QUEUE } from '../api/settings.js';
import { TetherError } from './errors.js';

/** What this module needs of a TetherClient (runs.ts), named here so the two modules need not import each other. */
interface QueueReader {
  client: Pick<Client, 'workflowService'>;
  namespace: string;
  /** The queue a plain `tether worker` here polls. */
  taskQueue: string;
}

/*
 * Queries and Updates run the workflow's code, so only a worker can answer
 * them. With no worker on a run's task queue, Temporal fails a query after
 * half a minute with no reason given, and holds an Update until a worker
 * comes, so a caller would hang. Callers ask first where they can, and put a
 * deadline on the rest; either way the error says who could answer and what
 * to do.
 */

/** Who polls a task queue for workflow tasks, as far as the server knows. */
export interface WorkerPresence {
  taskQueue: string;
  /** The latest poll the server saw, or null if it saw none (it forgets pollers after a few minutes). */
  lastPollAt: Date | null;
  /** A poll that recent: workers long-poll for a minute at a time, so a live idle worker's last poll can be a minute old. */
  live: boolean;
  /** The queue a plain `tether worker` polls, wherever it is started: the built-in default, and this client's. */
  isDefault: boolean;
}

/** A worker that polled within this long is taken to be alive: workers long-poll for a minute at a time. */
const LIVE_POLLER_MS = 70_000;

export async function workerPresence(tc: QueueReader, taskQueue: string): Promise<WorkerPresence> {
  const pollers = await queuePollers(tc, taskQueue);
  const polls = (pollers ?? []).map((p) => (p.lastAccessTime ? Number(p.lastAccessTime.seconds ?? 0) * 1000 : 0)).filter((ms) => ms > 0);
  const last = polls.length ? Math.max(...polls) : null;
  return {
    taskQueue,
    lastPollAt: last === null ? null : new Date(last),
    // A server that could not say is taken to have a worker: the caller goes on, under its deadline, as without the check.
    live: pollers === null || (last !== null && Date.now() - last < LIVE_POLLER_MS),
    // A TETHER_TASK_QUEUE set for this one command is not the one a worker started in another shell gets: the advice names it.
    isDefault: taskQueue === tc.taskQueue && taskQueue === DEFAULT_TASK_QUEUE,
  };
}

type Poller = { lastAccessTime?: { seconds?: unknown } | null };

/**
 * The queue's workflow pollers, or null if the server would not say. The
 * enhanced mode asks every partition of the queue: the plain one reports the
 * root's pollers only, and a busy worker's polls can all be matched in the
 * other partitions. It is deprecated, so a server that refuses it is asked
 * the plain way. Numbers, not the proto enums, so the CLI need not load them:
 * mode ENHANCED, task queue type WORKFLOW.
 */
async function queuePollers(tc: QueueReader, taskQueue: string): Promise<Poller[] | null> {
  const ask = (enhanced: boolean) =>
    tc.client.workflowService.describeTaskQueue({
      namespace: tc.namespace,
      taskQueue: { name: taskQueue },
      taskQueueType: 1,
      ...(enhanced ? { apiMode: 1, taskQueueTypes: [1], reportPollers: true } : {}),
    });
  const described = await ask(true).catch(() => ask(false).catch(() => null));
  if (!described) return null;
  return [...(described.pollers ?? []), ...Object.values(described.versionsInfo ?? {}).flatMap((v) => v.typesInfo?.[1]?.pollers ?? [])];
}

export async function hasLiveWorker(tc: QueueReader, taskQueue: string): Promise<boolean> {
  return (await workerPresence(tc, taskQueue)).live;
}

/**
 * How long a request about a run waits to hear from a worker again when the server knows of none: a server that
 * restarted forgot every poller, and the workers still running poll it again within seconds (up to 5 s, measured).
 */
const RETURNING_WORKER_MS = 10_000;
const RETURNING_POLL_MS = 250;

/** The parts of a run's description that say where its worker polls and whether one ever took it. */
interface RunOnQueue {
  taskQueue: string;
  /** A run no worker ever took has two events: started, and its first workflow task scheduled. */
  historyLength: number;
}

/**
 * Who polls a run's queue, waiting a little for the run's worker when the server has no record of any poller but
 * some worker did take the run: the server may have just restarted, and the request would otherwise be refused
 * for a worker that is there. A run no worker ever took (a worker not started yet) is answered at once, as is a
 * queue whose last poll the server remembers (a worker that died).
 */
export async function runWorkerPresence(tc: QueueReader, run: RunOnQueue, known?: WorkerPresence): Promise<WorkerPresence> {
  const presence = known ?? (await workerPresence(tc, run.taskQueue));
  if (presence.live || presence.lastPollAt !== null || run.historyLength <= 2) return presence;
  for (const deadline = Date.now() + RETURNING_WORKER_MS; Date.now() < deadline; ) {
    await sleep(RETURNING_POLL_MS);
    const again = await workerPresence(tc, run.taskQueue);
    if (again.live) return again;
  }
  return presence;
}

/** How long ago, for a person: "40 s", "3 min", "2 h". */
function ago(since: Date, now: number): string {
  const s = Math.max(0, Math.round((now - since.getTime()) / 1000));
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;
}

const lastPoll = ({ lastPollAt }: WorkerPresence, now: number) => (lastPollAt ? `the last poll was ${ago(lastPollAt, now)} ago` : 'none has polled it lately');

const startOne = ({ taskQueue, isDefault }: WorkerPresence) =>
  isDefault ? 'start one (`tether worker`)' : `start one on that queue (\`TETHER_TASK_QUEUE=${taskQueue} tether worker\`)`;

/**
 * The error for a request about an open run that no worker can take, said
 * before it is sent: a query (`answer`) or a control message (`apply`, which
 * was therefore not sent). The run waits where it stopped.
 */
export function noWorkerFor(runId: string, what: string, presence: WorkerPresence, request: 'answer' | 'apply', now = Date.now()): TetherError {
  // Ending a run needs no worker when nothing is left to cancel: Temporal can terminate it, and Tether reads that as killed.
  const orEnd =
    what === 'kill'
      ? `. To end it without a worker, terminate it (the Temporal UI, or \`temporal workflow terminate --workflow-id ${runId} --reason "<why>"\`): it ends killed, "terminated: <why>"`
      : '';
  const only = request === 'apply' ? `only a worker can apply it, so the ${what} message was not sent` : 'only a worker can answer for a run that is going on';
  const then = request === 'apply' ? ', then send it again' : '';
  return new TetherError(
    `${what}: no worker polls task queue "${presence.taskQueue}", which run ${runId} is on (${lastPoll(presence, now)}), and ${only}. ` +
      `${capitalized(startOne(presence))}${then}: the run goes on from where it stopped${orEnd}`,
    'unreachable',
  );
}

const capitalized = (text: string) => text[0].toUpperCase() + text.slice(1);

/** The error for a request that needs an ended run replayed, with no worker on its queue to do it (or none that did in time). */
export function noWorkerToReplay(runId: string, what: string, presence: WorkerPresence, now = Date.now()): TetherError {
  return new TetherError(
    `${what}: run ${runId} has ended, and only a worker on its task queue "${presence.taskQueue}" can replay it to answer ` +
      `(${presence.live ? `${presence.lastPollAt ? `one polled it ${ago(presence.lastPollAt, now)} ago, but` : 'no worker'} did not answer in time` : lastPoll(presence, now)}): ` +
      `${startOne(presence)} and ask again, or read the run with \`tether history ${runId}\``,
    'unreachable',
  );
}

/** What the starter of a run is told when no worker polls its queue: the run is safe, and waits for one. */
export function waitsForWorker(runId: string, presence: WorkerPresence, now = Date.now()): string {
  return `run ${runId} waits: no worker polls task queue "${presence.taskQueue}" (${lastPoll(presence, now)}). It starts when one does: ${startOne(presence)}`;
}

/** The error for a request about an open run that went unanswered for `waitedMs`; `afterwards` says what becomes of it. */
export function unansweredFor(runId: string, what: string, waitedMs: number, presence: WorkerPresence, afterwards = '', now = Date.now()): TetherError {
  const waited = `${what}: run ${runId} did not answer within ${Math.round(waitedMs / 1000)} s`;
  if (!presence.live) {
    return new TetherError(
      `${waited}: no worker polls its task queue "${presence.taskQueue}" (${lastPoll(presence, now)}). ${afterwards}` +
        `${capitalized(startOne(presence))}: the run goes on from where it stopped`,
      'unreachable',
    );
  }
  const polled = presence.lastPollAt
    ? `A worker polled its task queue "${presence.taskQueue}" ${ago(presence.lastPollAt, now)} ago but took none of the run's tasks`
    : `No worker took its task on task queue "${presence.taskQueue}"`;
  return new TetherError(
    `${waited}. ${polled}: it may have just stopped or died, or be too busy. ${afterwards}Try again shortly, or ${startOne(presence)}`,
    'unreachable',
  );
}
