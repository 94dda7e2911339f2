import { spawn } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlSignals } from '../src/api/messages.js';
import type { AuditEntry } from '../src/api/types.js';
import { startRun } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { startHarness, type Harness } from './helpers/harness.js';

const CLI = fileURLToPath(new URL('../bin/tether.js', import.meta.url));
const hang = { reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 300' } }] } };
const scripts: Record<string, Script> = {
  'hangs-quietly': { steps: [hang] } as Script,
  // Hangs again after an emergency stop cancels its tool and is cleared.
  'hangs-again': { steps: [], after: hang.reply } as Script,
  'critic-kills': { steps: [], after: { text: '{"action": "kill", "reason": "no progress for too long"}' } } as Script,
};

let h: Harness;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  h = await startHarness({ scripts });
  env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
});
afterAll(async () => h?.stop());

/** Runs `tether <args>` to its end; fails the test on a non-zero exit, with what it printed. */
function tether(...args: string[]): Promise<string> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) =>
    child.once('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`tether ${args.join(' ')} exited ${code}: ${stderr}${stdout}`)))),
  );
}

async function auditOf(runId: string): Promise<AuditEntry[]> {
  const out = await tether('history', runId, '--audit', '--output', 'json');
  const parsed = JSON.parse(out.trim().split('\n').pop()!) as { runId: string; audit: AuditEntry[] };
  expect(parsed.runId).toBe(runId);
  return parsed.audit;
}

const who = (e: AuditEntry) => ({ action: e.action, by: e.by, via: e.via, detail: e.detail });

describe('the audit trail on a real server', () => {
  it('names the CLI user, --as, and "unknown" for a raw Temporal signal, in tether history --audit', async () => {
    const me = `${os.userInfo().username}@${os.hostname()}`;
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-again', limits: { maxRuntime: '10m' }, critic: { policy: 'off' } });
    await h.until(runId, (s) => s.lastTool === 'shell');
    await tether('steer', runId, 'look', 'again');
    await tether('extend', runId, '--steps', '2', '--as', 'alice');
    await tether('estop', 'trip', runId, '--reason', 'checking something', '--as', 'bob');
    await tether('estop', 'clear', runId);
    await h.tc.client.workflow.getHandle(runId).signal(controlSignals.steer, { message: 'from a raw client' });
    await h.until(runId, (s) => (s.audit?.length ?? 0) === 5);
    await tether('kill', runId, '--reason', 'enough', '--as', 'carol');
    await h.result(runId);

    const audit = await auditOf(runId);
    expect(audit.map(who)).toEqual([
      { action: 'steer', by: me, via: 'cli', detail: 'look again' },
      { action: 'extend', by: 'alice', via: 'cli', detail: '+2 steps' },
      { action: 'emergencyStop', by: 'bob', via: 'cli', detail: 'checking something' },
      { action: 'clearEmergency', by: me, via: 'cli', detail: undefined },
      { action: 'steer', by: 'unknown', via: undefined, detail: 'from a raw client' },
      { action: 'kill', by: 'carol', via: 'cli', detail: 'enough' },
    ]);
    for (const e of audit) expect(Number.isNaN(Date.parse(e.at))).toBe(false);
    const text = await tether('history', runId, '--audit');
    expect(text).toMatch(/kill\s+carol\s+cli\s+enough/);
    expect(text).toMatch(/steer\s+unknown\s+from a raw client/);
  });

  it('applies a raw Signal whose optional audit does not read, keeping what does, and marks a Signal the run ignored in history', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-again', limits: { maxRuntime: '10m' }, critic: { policy: 'off' } });
    await h.until(runId, (s) => s.lastTool === 'shell');
    const handle = h.tc.client.workflow.getHandle(runId);
    await handle.signal(controlSignals.steer, { message: 'unknown key', audit: { by: 'ops', ticket: 'INC-1' } } as never);
    await handle.signal(controlSignals.emergencyStop, { reason: 'bad via', audit: { by: 'ops', via: 'pager' } } as never);
    await handle.signal(controlSignals.clearEmergency, { audit: { by: '' } } as never);
    await handle.signal(controlSignals.kill, {} as never);
    await h.until(runId, (s) => (s.audit?.length ?? 0) === 3);
    await handle.signal(controlSignals.kill, { reason: 'enough', audit: { by: 'ops', via: 'pager', ticket: 'INC-1' } } as never);
    expect(await h.result(runId)).toMatchObject({ status: 'killed', cause: 'enough' });

    expect((await auditOf(runId)).map(who)).toEqual([
      { action: 'steer', by: 'ops', via: undefined, detail: 'unknown key' },
      { action: 'emergencyStop', by: 'ops', via: undefined, detail: 'bad via' },
      { action: 'clearEmergency', by: 'unknown', via: undefined, detail: undefined },
      { action: 'kill', by: 'ops', via: undefined, detail: 'enough' },
    ]);
    const history = JSON.parse((await tether('history', runId, '--output', 'json')).trim().split('\n').pop()!) as {
      controls: Array<{ name: string; error: string | null }>;
    };
    expect(history.controls.map((c) => [c.name, c.error])).toEqual([
      ['steer', null],
      ['emergencyStop', null],
      ['clearEmergency', null],
      ['kill', expect.stringMatching(/^ignored: kill: reason/)],
      ['kill', null],
    ]);
  });

  it('rebuilds the trail from the history of a run terminated while no worker could replay it', async () => {
    // A queue no worker polls: the messages reach the history, and no replay can answer for the run.
    const { runId } = await startRun(h.tc, { goal: 'x', model: 'scripted:hangs-quietly', critic: { policy: 'off' } }, { taskQueue: `nobody-${Date.now()}` });
    const handle = h.tc.client.workflow.getHandle(runId);
    await handle.signal(controlSignals.steer, { message: 'look again', audit: { by: 'alice', via: 'cli' } });
    await handle.signal(controlSignals.emergencyStop, { reason: 'checking', audit: { by: 'bob', via: 'panel' } });
    await handle.signal(controlSignals.kill, {} as never);
    await handle.terminate('cleanup');
    const out = JSON.parse((await tether('history', runId, '--audit', '--output', 'json')).trim().split('\n').pop()!) as {
      audit: AuditEntry[];
      source: string;
    };
    expect(out.source).toBe('history');
    // The terminate is the kill Temporal carried out: no control message, sent by a raw client.
    expect(out.audit.map(who)).toEqual([
      { action: 'steer', by: 'alice', via: 'cli', detail: 'look again' },
      { action: 'emergencyStop', by: 'bob', via: 'panel', detail: 'checking' },
      { action: 'kill', by: 'unknown', detail: 'terminated: cleanup' },
    ]);
    expect(await tether('history', runId, '--audit')).toMatch(/emergencyStop\s+bob\s+panel\s+checking/);
  });

  it('records a terminate of a run a worker replays as a kill by "unknown", after the messages the run took', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:hangs-quietly', critic: { policy: 'off' } });
    await h.tc.client.workflow.getHandle(runId).signal(controlSignals.steer, { message: 'look again', audit: { by: 'alice', via: 'cli' } });
    await h.tc.client.workflow.getHandle(runId).terminate('stuck for an hour');
    expect((await auditOf(runId)).map(who)).toEqual([
      { action: 'steer', by: 'alice', via: 'cli', detail: 'look again' },
      { action: 'kill', by: 'unknown', detail: 'terminated: stuck for an hour' },
    ]);
  });

  it('names the critic as the sender of its kill', async () => {
    const runId = await h.start({
      goal: 'x',
      model: 'scripted:hangs-quietly',
      limits: { maxRuntime: '1m' },
      critic: { policy: 'llm', softTimeout: '1s', model: 'scripted:critic-kills' },
    });
    expect(await h.result(runId)).toMatchObject({ status: 'killed' });
    const audit = await auditOf(runId);
    expect(audit.map(who)).toContainEqual({ action: 'kill', by: 'critic', via: 'critic', detail: 'no progress for too long' });
  });
});
