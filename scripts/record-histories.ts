// Records the histories of representative runs as replay fixtures
// (test/fixtures/histories/*.json). Run after a deliberate workflow change,
// with `patched()` guarding the old path, and commit the new files beside the
// old: TETHER_RECORD_PREFIX (e.g. `bound-`) names the new set so it never
// overwrites the histories of older workflow code. TETHER_RECORD_ONLY (a comma
// list of names) records only those runs, for a fixture of a new feature.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import pino from 'pino';
import { controlSignals } from '../src/api/messages.js';
import { forkRun } from '../src/client/fork.js';
import { connectTether, controlRun, getStatus, startRun, type TetherClient } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { startScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { createTetherWorker } from '../src/worker.js';

const OUT = fileURLToPath(new URL('../test/fixtures/histories/', import.meta.url));
const PREFIX = process.env.TETHER_RECORD_PREFIX ?? '';
/** A comma list of the runs to record (e.g. `forked`), so a new fixture can be added without re-recording the others. */
const ONLY = process.env.TETHER_RECORD_ONLY?.split(',').filter(Boolean) ?? null;
const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });

const scripts: Record<string, Script> = {
  'every-tool': {
    steps: [
      call('write_file', { path: 'a.txt', content: 'a' }),
      call('read_file', { path: 'a.txt' }),
      call('shell', { command: 'cat a.txt' }),
      call('finish', { summary: 'done' }),
    ],
  } as Script,
  'verify-fix': {
    steps: [
      call('write_file', { path: 'ok.txt', content: 'no' }),
      call('finish', { summary: '1' }),
      call('write_file', { path: 'ok.txt', content: 'yes' }),
      call('finish', { summary: '2' }),
    ],
  } as Script,
  // A reply that takes 800 ms: an emergency stop sent meanwhile may reach the worker only after the reply came.
  'slow-reply': { steps: [{ ...call('finish', { summary: 'done after the clear' }), delayMs: 800 }] } as Script,
  'fails-then-clear': { steps: [call('shell', { command: 'exit 1' }), call('shell', { command: 'exit 1' }), call('finish', { summary: 'cleared' })] } as Script,
  'slow-tool': { steps: [call('shell', { command: 'sleep 2' }), call('finish', { summary: 'steered' })] } as Script,
  hang: { steps: [call('shell', { command: 'sleep 300' })] } as Script,
  retries: { steps: [{ reply: { text: 'answered after a 503' }, faults: [{ kind: '503' }] }] } as Script,
  asks: { steps: [call('ask_user', { question: 'colour?' }), call('finish', { summary: 'asked' })] } as Script,
  loops: { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'echo same' } }] } } as Script,
  delegates: { steps: [call('delegate', { goal: 'sub-task', model: 'scripted:sub-agent' }), call('finish', { summary: 'delegated' })] } as Script,
  'delegates-a-hang': { steps: [call('delegate', { goal: 'hang', model: 'scripted:hang' })] } as Script,
  // Each of the two writes costs $0.003 ($1 per million prompt tokens): the second reaches a budget of $0.005.
  'spends-then-finishes': {
    steps: [
      { reply: { ...call('write_file', { path: 'a.txt', content: 'a' }).reply, usage: { prompt: 3_000, completion: 0 } } },
      { reply: { ...call('write_file', { path: 'b.txt', content: 'b' }).reply, usage: { prompt: 3_000, completion: 0 } } },
      call('finish', { summary: 'spent and finished' }),
    ],
  } as Script,
  // Enough 503s to open its circuit: the run waits it out, its probe fails once more, then the provider answers.
  'down-then-up': { steps: [{ ...call('finish', { summary: 'the provider came back' }), faults: [{ kind: '503', times: 6 }] }] } as Script,
  gated: {
    steps: [
      {
        reply: {
          toolCalls: [
            { name: 'shell', args: { command: 'echo a > a.txt' } },
            { name: 'shell', args: { command: 'echo b > b.txt' } },
          ],
        },
      },
      call('shell', { command: 'echo c > c.txt' }),
      call('finish', { summary: 'decided' }),
    ],
  } as Script,
  'sub-agent': { steps: [call('finish', { summary: 'sub-task done' })] } as Script,
  'delegates-a-write': {
    steps: [call('delegate', { goal: 'write it', model: 'scripted:gated-write', tools: ['shell', 'finish'] }), call('finish', { summary: 'delegated' })],
  } as Script,
  'gated-write': { steps: [call('shell', { command: 'echo sub > sub.txt' }), call('finish', { summary: 'wrote it' })] } as Script,
  compacts: {
    steps: [
      call('write_file', { path: 'a.txt', content: 'a'.repeat(1_500) }),
      call('write_file', { path: 'b.txt', content: 'b'.repeat(1_500) }),
      call('write_file', { path: 'c.txt', content: 'c'.repeat(1_500) }),
      call('finish', { summary: 'compacted' }),
    ],
    compaction: { reply: { text: 'wrote a, b and c' } },
  } as Script,
};

async function until(tc: TetherClient, id: string, predicate: (s: Awaited<ReturnType<typeof getStatus>>) => boolean): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const status = await getStatus(tc, id).catch(() => null);
    if (status && predicate(status)) return;
    await sleep(100);
  }
  throw new Error(`${id}: condition never met`);
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-record-'));
const server = await startDevServer({ port: await freePort(), db: path.join(dir, 'temporal.db'), headless: true });
const scripted = await startScriptedServer({ port: 0, scripts });
const { worker, connection } = await createTetherWorker({
  address: server.address,
  taskQueue: 'record',
  scriptedUrl: scripted.url,
  workspaceRoot: dir,
  deps: { checkpointRoot: path.join(dir, 'checkpoints') },
  logger: pino({ level: 'warn' }),
});
const running = worker.run();
const tc = await connectTether({ address: server.address, taskQueue: 'record' });
const base = { critic: { policy: 'off' as const } };
// Each run's workflow id is its fixture's name: the replay test replays it under that id.
/** Each run's driver; it returns the ids of other runs to record with it (a sub-agent), under their own names. */
const runs: Array<[string, (id: string) => Promise<unknown>]> = [
  ['every-tool', async (id) => void (await startRun(tc, { ...base, goal: 'g', model: 'scripted:every-tool' }, { id }))],
  [
    'verify-fix',
    async (id) => void (await startRun(tc, { ...base, goal: 'g', model: 'scripted:verify-fix', verify: { command: 'grep -q yes ok.txt' } }, { id })),
  ],
  [
    'fails-then-clear',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:fails-then-clear', limits: { maxConsecutiveErrors: 2 } }, { id });
      await until(tc, id, (s) => s.state === 'emergency_stopped');
      await controlRun(tc, id, 'clearEmergency', {});
    },
  ],
  [
    'steer-extend',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:slow-tool' }, { id });
      await until(tc, id, (s) => s.lastTool === 'shell');
      await controlRun(tc, id, 'steer', { message: 'hurry' });
      await controlRun(tc, id, 'extend', { by: '1m', steps: 5 });
    },
  ],
  [
    'killed',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:hang' }, { id });
      await until(tc, id, (s) => s.lastTool === 'shell');
      await controlRun(tc, id, 'kill', { reason: 'recorded kill' });
    },
  ],
  ['retries', async (id) => void (await startRun(tc, { ...base, goal: 'g', model: 'scripted:retries' }, { id }))],
  [
    'asks',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:asks', tools: ['ask_user', 'finish'] }, { id });
      await until(tc, id, (s) => s.state === 'blocked');
      await controlRun(tc, id, 'answer', { text: 'blue' });
    },
  ],
  ['loops', async (id) => void (await startRun(tc, { ...base, goal: 'g', model: 'scripted:loops' }, { id }))],
  ['delegates', async (id) => void (await startRun(tc, { ...base, goal: 'g', model: 'scripted:delegates', tools: ['delegate', 'finish'] }, { id }))],
  ['compacts', async (id) => void (await startRun(tc, { ...base, goal: 'g', model: 'scripted:compacts', limits: { maxContextChars: 2_000 } }, { id }))],
  [
    'approvals',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:gated', approvals: [{ tool: 'shell' }] }, { id });
      // Each Update returns once the decision is applied, so the next held call is a new one.
      const decideNext = async (decision: Record<string, unknown>) => {
        await until(tc, id, (s) => s.state === 'awaiting_tool_approval');
        const { pendingToolCall } = await getStatus(tc, id);
        await controlRun(tc, id, 'decideTool', { callId: pendingToolCall!.callId, ...decision });
      };
      await decideNext({ decision: 'approve' });
      await decideNext({ decision: 'deny', reason: 'not b' });
      await decideNext({ decision: 'edit', args: { command: 'echo edited > c.txt' } });
    },
  ],
  [
    // A refused Update ends no workflow task in history: what its handler first used must still be recorded.
    'refused-then-approved',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:gated', approvals: [{ tool: 'shell' }] }, { id });
      await until(tc, id, (s) => s.state === 'awaiting_tool_approval');
      await controlRun(tc, id, 'decideTool', { callId: 'call_stale', decision: 'approve' }).then(
        () => Promise.reject(new Error('a stale callId was accepted')),
        () => undefined,
      );
      for (let held = await getStatus(tc, id); held.pendingToolCall; held = await getStatus(tc, id)) {
        await controlRun(tc, id, 'decideTool', { callId: held.pendingToolCall.callId, decision: 'approve' });
        await until(tc, id, (s) => s.state !== 'running');
      }
    },
  ],
  ['critic', async (id) => void (await startRun(tc, { goal: 'g', model: 'scripted:slow-tool', critic: { policy: 'extend-once', softTimeout: '1s' } }, { id }))],
  [
    // A sub-agent's held call shown on its parent and decided there; the parent checkpoints around the delegate call.
    'delegate-approval',
    async (id) => {
      await startRun(
        tc,
        { ...base, goal: 'g', model: 'scripted:delegates-a-write', tools: ['shell', 'delegate', 'finish'], approvals: [{ tool: 'shell' }] },
        { id },
      );
      await until(tc, id, (s) => s.waitingSubAgent !== undefined);
      const { pendingToolCall, waitingSubAgent } = await getStatus(tc, id);
      await controlRun(tc, id, 'decideTool', { callId: pendingToolCall!.callId, decision: 'approve' });
      return [waitingSubAgent!];
    },
  ],
  [
    // A parent killed while its sub-agent runs a tool waits for the sub-agent to end killed, and counts what it spent.
    'killed-delegating',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:delegates-a-hang', tools: ['shell', 'delegate'] }, { id });
      await until(tc, id, (s) => (s.children?.length ?? 0) > 0);
      const child = (await getStatus(tc, id)).children![0]!;
      await until(tc, child, (s) => s.lastTool === 'shell');
      await controlRun(tc, id, 'kill', { reason: 'recorded kill of a parent' });
      return [child];
    },
  ],
  [
    // The reply that reaches the ceiling keeps its call: it runs once the budget is approved.
    'budget-paused',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:spends-then-finishes', limits: { budgetUsd: 0.005 } }, { id });
      await until(tc, id, (s) => s.state === 'awaiting_approval');
      await controlRun(tc, id, 'approve', { addBudgetUsd: 1 });
    },
  ],
  ['circuit-wait', async (id) => void (await startRun(tc, { ...base, goal: 'g', model: 'scripted:down-then-up' }, { id }))],
  [
    // A spec that got past the client (here a relative workspace, through a raw Temporal start) ends the run failed.
    'invalid-spec',
    async (id) => {
      const args = [{ ...base, goal: 'g', model: 'scripted:every-tool', workspace: 'relative/dir' }];
      await tc.client.workflow.start('agentRun', { taskQueue: 'record', workflowId: id, args });
    },
  ],
  [
    // A stop Signal with no payload still stops the run, and a kill Signal with a field too many still kills it.
    'bare-stop-signal',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:slow-tool' }, { id });
      await until(tc, id, (s) => s.lastTool === 'shell');
      const handle = tc.client.workflow.getHandle(id);
      await handle.signal(controlSignals.emergencyStop, undefined as never);
      await until(tc, id, (s) => s.state === 'emergency_stopped');
      await handle.signal(controlSignals.kill, { reason: 'recorded kill', force: true } as never);
    },
  ],
  [
    // An emergency stop cuts a model call whose reply still comes: the run counts what it cost, and asks again after the clear.
    'late-reply',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:slow-reply' }, { id });
      const handle = tc.client.workflow.getHandle(id);
      const started = async () =>
        ((await handle.describe()).raw.pendingActivities ?? []).some((a) => a.activityType?.name === 'callModel' && Number(a.state) === 2);
      while (!(await started())) await sleep(20);
      await sleep(300);
      await controlRun(tc, id, 'emergencyStop', { reason: 'recorded stop' });
      // Should the cancel reach the worker before the reply, the run counts nothing: record again.
      await until(tc, id, (s) => s.warnings.some((w) => w.startsWith('a model reply came after the emergency stop')));
      await controlRun(tc, id, 'clearEmergency', {});
    },
  ],
  [
    'forked',
    async (id) => {
      await startRun(tc, { ...base, goal: 'g', model: 'scripted:every-tool' }, { id: `${id}-source` });
      await waitForResult(tc, `${id}-source`);
      await forkRun(tc, `${id}-source`, { step: 2, steer: 'once more', id });
    },
  ],
];
try {
  await mkdir(OUT, { recursive: true });
  for (const [name, drive] of runs.filter(([name]) => !ONLY || ONLY.includes(name))) {
    const id = `${PREFIX}${name}`;
    const returned = await drive(id);
    const others = Array.isArray(returned) ? (returned as string[]) : [];
    for (const recorded of [id, ...others]) {
      await waitForResult(tc, recorded);
      const history = await tc.client.workflow.getHandle(recorded).fetchHistory();
      await writeFile(path.join(OUT, `${recorded}.json`), historyToJSON(history));
      process.stdout.write(`recorded ${recorded} (${history.events?.length} events)\n`);
    }
  }
} finally {
  worker.shutdown();
  await running.catch(() => undefined);
  await connection.close();
  await tc.close();
  await scripted.close();
  await server.stop();
}
