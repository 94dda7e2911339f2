import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../src/scripted/script.js';
import { freePort } from '../src/server/free-port.js';
import { startHarness, type Harness } from './helpers/harness.js';

const CLI = fileURLToPath(new URL('../bin/tether.js', import.meta.url));
const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });

const scripts: Record<string, Script> = {
  quick: { steps: [call('shell', { command: 'echo hi' }), call('finish', { summary: 'all good' })] } as Script,
  spins: { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'true' } }] } } as Script,
  slow: { steps: [call('shell', { command: 'sleep 300' })] } as Script,
  'many-steps': { steps: [{ ...call('write_file', { path: 'n.txt', content: '{{step}}' }), repeat: 10_000 }] } as Script,
};

let h: Harness;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  h = await startHarness({ scripts });
  env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
});
afterAll(async () => h?.stop());

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], opts: { env?: NodeJS.ProcessEnv; onStart?: (child: ReturnType<typeof spawn>) => void } = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI, ...args], { env: opts.env ?? env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  opts.onStart?.(child);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

const lastJson = (out: string) => JSON.parse(out.trim().split('\n').pop()!);
const runArgs = (id: string, model: string, ...extra: string[]) => ['run', '--id', id, '--model', `scripted:${model}`, '--critic', 'off', '--wait', ...extra, 'do the thing'];

describe('tether run --wait exit codes', () => {
  it('exits 0 for a completed run and prints one JSON result on the last stdout line', async () => {
    const id = `cli-ok-${Date.now()}`;
    const out = await cli(runArgs(id, 'quick', '--output', 'json'));
    expect(out.code).toBe(0);
    expect(lastJson(out.stdout)).toMatchObject({ runId: id, status: 'completed', summary: 'all good', steps: 2 });
    expect(out.stderr).toMatch(/step \d+\/50/);
  });

  it('exits 1 for a run that fails', async () => {
    const out = await cli(runArgs(`cli-fail-${Date.now()}`, 'spins', '--max-steps', '2', '--output', 'json'));
    expect(out.code).toBe(1);
    expect(lastJson(out.stdout)).toMatchObject({ status: 'failed', cause: 'maxSteps reached (2)' });
  });

  it('cancels the run and exits 11 on SIGINT', async () => {
    const id = `cli-int-${Date.now()}`;
    const out = await cli(runArgs(id, 'slow', '--output', 'json'), {
      onStart: (child) => {
        void h.until(id, (s) => s.lastTool === 'shell').then(() => child.kill('SIGINT'));
      },
    });
    expect(out.code).toBe(11);
    expect(lastJson(out.stdout)).toMatchObject({ runId: id, status: 'cancelled' });
    expect((await h.result(id)).status).toBe('cancelled');
  });

  it('leaves the run running with --detach-on-interrupt', async () => {
    const id = `cli-detach-${Date.now()}`;
    const out = await cli(runArgs(id, 'slow', '--detach-on-interrupt'), {
      onStart: (child) => {
        void h.until(id, (s) => s.lastTool === 'shell').then(() => child.kill('SIGTERM'));
      },
    });
    expect(out.code).toBe(11);
    expect(out.stderr).toContain(`tether status ${id}`);
    expect((await h.status(id)).state).toBe('running');
    await cli(['kill', id, '--reason', 'cleanup']);
  });

  it('exits 12 when the run continues as new and --no-follow is given', async () => {
    const id = `cli-can-${Date.now()}`;
    const spec = `${process.env.TMPDIR ?? '/tmp'}/tether-cli-spec-${Date.now()}.json`;
    const { writeFile } = await import('node:fs/promises');
    await writeFile(spec, JSON.stringify({ goal: 'loop', model: 'scripted:many-steps', critic: { policy: 'off' }, limits: { maxSteps: 10_000, maxHistoryEvents: 200 } }));
    const out = await cli(['run', '--id', id, '--spec', spec, '--wait', '--no-follow', '--output', 'json']);
    expect(out.code).toBe(12);
    expect(lastJson(out.stdout)).toMatchObject({ runId: id, state: 'continued_as_new' });
    await cli(['kill', id, '--reason', 'cleanup']);
  }, 90_000);
});

describe('tether run --output stream-json', () => {
  it('prints one parseable event per line, in order, ending with the result', async () => {
    const out = await cli(runArgs(`cli-stream-${Date.now()}`, 'quick', '--output', 'stream-json'));
    expect(out.code).toBe(0);
    const events = out.stdout.trim().split('\n').map((line) => JSON.parse(line));
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('run_started');
    expect(types[types.length - 1]).toBe('result');
    expect(types.indexOf('step_started')).toBeLessThan(types.indexOf('llm_result'));
    expect(types.indexOf('tool_started')).toBeLessThan(types.indexOf('tool_finished'));
    expect(events.find((e) => e.type === 'tool_finished')).toMatchObject({ tool: 'shell', success: true });
    expect(events[events.length - 1].result).toMatchObject({ status: 'completed' });
  });
});

describe('operator verbs', () => {
  it('prints status and list as aligned tables, and JSON on request', async () => {
    const id = `cli-table-${Date.now()}`;
    expect((await cli(runArgs(id, 'quick'))).code).toBe(0);
    const status = await cli(['status', id]);
    expect(status.stdout).toMatch(/^run:\s+cli-table-/m);
    expect(status.stdout).toMatch(/^emergency stop:\s+off$/m);
    const statusJson = lastJson((await cli(['status', id, '--output', 'json'])).stdout);
    expect(statusJson).toMatchObject({ runId: id, state: 'completed', emergencyStop: { active: false } });
    for (let i = 0; i < 30; i++) {
      const list = await cli(['list', '--output', 'json']);
      if (lastJson(list.stdout).runs.some((r: { runId: string }) => r.runId === id)) break;
      await sleep(300);
    }
    const table = await cli(['list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATE\s+STEPS\s+COST\s+MODEL\s+ESTOP\s+AGE$/);
    expect(table.stdout).toContain(id);
    const history = await cli(['history', id]);
    expect(history.stdout).toContain('ACTIVITY_TASK_SCHEDULED');
    expect(history.stdout).toContain('callModel');
  });

  it('shows the validator message and exits non-zero for a bad control message', async () => {
    const id = `cli-bad-${Date.now()}`;
    await cli(['run', '--id', id, '--model', 'scripted:slow', '--critic', 'off', 'x']);
    const out = await cli(['steer', id, ' ', '--output', 'json']);
    expect(out.code).toBe(1);
    expect(lastJson(out.stdout).error.message).toMatch(/steer message must not be empty/);
    const estop = await cli(['estop', 'clear', id]);
    expect(estop.stderr).toContain('Emergency stop is not active');
    await cli(['kill', id, '--reason', 'cleanup']);
  });

  it('explains what to do when the server is unreachable, the run is unknown, or a flag is invalid', async () => {
    const nowhere = { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` };
    const down = await cli(['list'], { env: nowhere });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach the Temporal server .*tether server/s);
    const unknown = await cli(['status', `no-such-run-${Date.now()}`]);
    expect(unknown.stderr).toMatch(/no run with id/);
    const badFlag = await cli(['run', '--model', 'scripted:quick', '--max-steps', 'lots', 'x']);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toMatch(/invalid --max-steps "lots"/);
    const badSpec = await cli(['run', '--model', 'gpt-4', 'x', '--output', 'json']);
    expect(badSpec.code).toBe(2);
    expect(lastJson(badSpec.stdout).error.message).toMatch(/model must be provider:name/);
  });
});

describe('the service verbs', () => {
  it('runs the demo to completed and prints its RunResult as JSON with --output json', async () => {
    const port = h.address.split(':').pop()!;
    // A queue of its own: the demo's worker must take the demo run, not the harness's worker.
    const demoEnv = { ...env, TETHER_TASK_QUEUE: `demo-${Date.now()}`, TETHER_HOME: await mkdtemp(path.join(os.tmpdir(), 'tether-demo-')) };
    const out = await cli(['demo', '--exit', '--port', port, '--panel-port', '0', '--output', 'json'], { env: demoEnv });
    expect(out.code, out.stderr).toBe(0);
    const result = lastJson(out.stdout);
    expect(result).toMatchObject({ status: 'completed', verify: { passed: true, attempts: 2 } });
    expect(result.historyUrl).toContain(encodeURIComponent(result.runId));
  }, 60_000);

  it('reports a service that cannot start as one JSON error with --output json', async () => {
    const out = await cli(['codec-server', '--output', 'json'], { env: { ...env, TETHER_ENCRYPTION_KEY: '', TETHER_ENCRYPTION_KEYS: '' } });
    expect(out.code).toBe(1);
    expect(lastJson(out.stdout).error.message).toMatch(/no key: set TETHER_ENCRYPTION_KEY/);
    const bad = await cli(['worker', '--output', 'yaml']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid --output "yaml"/);
  });
});
