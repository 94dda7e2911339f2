import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../src/scripted/script.js';
import { portFree } from '../src/cli/ports.js';
import { freePort } from '../src/server/free-port.js';
import { eventually } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { startHoldingProxy } from './helpers/holding-proxy.js';

const CLI = fileURLToPath(new URL('../bin/tether.js', import.meta.url));
const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });

const scripts: Record<string, Script> = {
  quick: { steps: [call('shell', { command: 'echo hi' }), call('finish', { summary: 'all good' })] } as Script,
  spins: { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'true' } }] } } as Script,
  slow: { steps: [call('shell', { command: 'sleep 300' })] } as Script,
  'slow-model': { steps: [{ ...call('finish', { summary: 'too late' }), delayMs: 120_000 }] } as Script,
  'many-steps': { steps: [{ ...call('write_file', { path: 'n.txt', content: '{{step}}' }), repeat: 10_000 }] } as Script,
  'fails-alone': { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'echo attempt {{step}}; exit 3' } }] } } as Script,
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

function cli(args: string[], opts: { env?: NodeJS.ProcessEnv; stdin?: string; onStart?: (child: ReturnType<typeof spawn>) => void } = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI, ...args], { env: opts.env ?? env, stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  opts.onStart?.(child);
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const lastJson = (out: string) => JSON.parse(out.trim().split('\n').pop()!);
const runArgs = (id: string, model: string, ...extra: string[]) => [
  'run',
  '--id',
  id,
  '--model',
  `scripted:${model}`,
  '--critic',
  'off',
  '--wait',
  ...extra,
  'do the thing',
];

describe('tether run --wait exit codes', () => {
  it('exits 0 for a completed run and prints one JSON result on the last stdout line', async () => {
    const id = `cli-ok-${Date.now()}`;
    const out = await cli(runArgs(id, 'quick', '--output', 'json'));
    expect(out.code).toBe(0);
    expect(lastJson(out.stdout)).toMatchObject({ runId: id, status: 'completed', summary: 'all good', steps: 2 });
    expect(out.stderr).toMatch(/step \d+\/50/);
  });

  it('refuses a run id already taken, by a run that has ended too, and says how that run ended', async () => {
    const id = `cli-reuse-${Date.now()}`;
    expect((await cli(runArgs(id, 'quick'))).code).toBe(0);
    const again = await cli(runArgs(id, 'quick', '--output', 'json'));
    expect(again.code).toBe(1);
    expect(lastJson(again.stdout).error).toEqual({ code: 'conflict', message: `a run with id "${id}" already exists (it ended completed); pick another id` });
    const runs = await h.tc.client.workflow.list({ query: `WorkflowId = '${id}'` });
    let executions = 0;
    for await (const _ of runs) executions++;
    expect(executions).toBe(1);
  });

  it('exits 1 for a run that fails', async () => {
    const out = await cli(runArgs(`cli-fail-${Date.now()}`, 'spins', '--max-steps', '2', '--output', 'json'));
    expect(out.code).toBe(1);
    expect(lastJson(out.stdout)).toMatchObject({ status: 'failed', cause: 'maxSteps reached (2)' });
  });

  it('cancels the run on SIGINT, exits 11, and reports its real figures and who cancelled it', async () => {
    const id = `cli-int-${Date.now()}`;
    const out = await cli(runArgs(id, 'slow', '--output', 'json'), {
      onStart: (child) => {
        void h.until(id, (s) => s.lastTool === 'shell').then(() => child.kill('SIGINT'));
      },
    });
    expect(out.code).toBe(11);
    const result = lastJson(out.stdout);
    expect(result).toMatchObject({ runId: id, status: 'cancelled', steps: 1, cause: 'cancelled by SIGINT in tether run' });
    expect(result.costUsd).toBeGreaterThan(0);
    expect(result.usage.totalTokens).toBeGreaterThan(0);
    expect((await h.result(id)).status).toBe('cancelled');
    // The tool the cancellation interrupted did not fail: nothing counts towards the emergency stop.
    expect((await h.status(id)).consecutiveErrors).toBe(0);
    expect((await cli(['status', id])).stdout).toMatch(/^cause:\s+cancelled by SIGINT in tether run$/m);
  });

  it('a SIGINT while the start is on its way lets it finish, then cancels the run (--wait) or names it (without): no run goes on unnamed', async () => {
    // The goal makes the start the one large request: the proxy holds the server's answers from inside it.
    const goal = `a long goal ${'x'.repeat(100_000)}`;
    for (const wait of [true, false]) {
      const proxy = await startHoldingProxy(h.address, 40_000);
      const id = `cli-int-start-${wait}-${Date.now()}`;
      const args = ['run', '--id', id, '--model', 'scripted:slow', '--critic', 'off', '--output', 'json', ...(wait ? ['--wait'] : []), goal];
      try {
        const out = await cli(args, {
          env: { ...env, TEMPORAL_ADDRESS: proxy.address },
          onStart: (child) => {
            // The answers come once the CLI has said what it does with the signal (a CLI that exits on it says nothing).
            let said = '';
            child.stderr!.on('data', (d) => {
              said += d;
              if (said.includes('is being started')) proxy.release();
            });
            void proxy.holding.then(() => child.kill('SIGINT'));
          },
        });
        expect(out.stderr).toContain(`SIGINT: run ${id} is being started; it is ${wait ? 'cancelled' : 'named'} once the server answers`);
        if (wait) {
          expect({ code: out.code, result: lastJson(out.stdout) }).toMatchObject({ code: 11, result: { runId: id, status: 'cancelled' } });
          expect((await h.result(id)).status).toBe('cancelled');
        } else {
          expect({ code: out.code, result: lastJson(out.stdout) }).toEqual({ code: 0, result: { runId: id, state: 'running' } });
          expect(out.stderr).toContain(`SIGINT came while run ${id} was starting: it has started and goes on`);
          expect((await h.status(id)).state).toBe('running');
        }
      } finally {
        await h.tc.client.workflow
          .getHandle(id)
          .terminate('test cleanup')
          .catch(() => undefined);
        await proxy.close();
      }
    }
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
    // stdout says which run goes on, in text as in JSON.
    expect(out.stdout).toMatch(new RegExp(`^run:\\s+${id}\nstate:\\s+running\n$`));
    expect((await h.status(id)).state).toBe('running');
    await cli(['kill', id, '--reason', 'cleanup']);
  });

  it('exits 12 when the run continues as new and --no-follow is given', async () => {
    const id = `cli-can-${Date.now()}`;
    const spec = `${process.env.TMPDIR ?? '/tmp'}/tether-cli-spec-${Date.now()}.json`;
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      spec,
      JSON.stringify({ goal: 'loop', model: 'scripted:many-steps', critic: { policy: 'off' }, limits: { maxSteps: 10_000, maxHistoryEvents: 200 } }),
    );
    const out = await cli(['run', '--id', id, '--spec', spec, '--wait', '--no-follow', '--output', 'json']);
    expect(out.code).toBe(12);
    expect(lastJson(out.stdout)).toMatchObject({ runId: id, state: 'continued_as_new' });
    await cli(['kill', id, '--reason', 'cleanup']);
  }, 90_000);
});

describe('tether run reads from stdin', () => {
  it('takes the goal from stdin with "-", and the RunSpec with --spec - (a byte-order mark before its JSON too)', async () => {
    const goal = `a goal from a pipe\n${'with many lines\n'.repeat(50)}`;
    const fromGoal = `cli-stdin-goal-${Date.now()}`;
    const out = await cli(['run', '--id', fromGoal, '--model', 'scripted:quick', '--critic', 'off', '--output', 'json', '-'], { stdin: goal });
    expect(out.code, out.stderr).toBe(0);
    expect((await h.status(fromGoal)).goal).toBe(goal.trim());
    const fromSpec = `cli-stdin-spec-${Date.now()}`;
    const spec = `\uFEFF${JSON.stringify({ goal: 'from a piped spec', model: 'scripted:quick', critic: { policy: 'off' } })}`;
    const piped = await cli(['run', '--id', fromSpec, '--spec', '-', '--output', 'json'], { stdin: spec });
    expect(piped.code, piped.stderr).toBe(0);
    expect((await h.status(fromSpec)).goal).toBe('from a piped spec');
    const both = await cli(['run', '--spec', '-', '-'], { stdin: spec });
    expect({ code: both.code, said: both.stderr.includes('stdin can give the goal or the --spec, not both') }).toEqual({ code: 2, said: true });
    for (const id of [fromGoal, fromSpec]) expect((await h.result(id)).status).toBe('completed');
  });
});

describe('tether run --output stream-json', () => {
  it('prints one parseable event per line, in order, ending with the result', async () => {
    const out = await cli(runArgs(`cli-stream-${Date.now()}`, 'quick', '--output', 'stream-json'));
    expect(out.code).toBe(0);
    const events = out.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('run_started');
    expect(types[types.length - 1]).toBe('result');
    expect(types.indexOf('step_started')).toBeLessThan(types.indexOf('llm_result'));
    expect(types.indexOf('tool_started')).toBeLessThan(types.indexOf('tool_finished'));
    expect(events.find((e) => e.type === 'tool_finished')).toMatchObject({ tool: 'shell', success: true });
    expect(events[events.length - 1].result).toMatchObject({ status: 'completed' });
    const llm = events.filter((e) => e.type === 'llm_result');
    // Each step's own tokens: together they are the run's.
    expect(llm.reduce((n, e) => n + e.usage.totalTokens, 0)).toBe(events[events.length - 1].result.usage.totalTokens);
  });

  it('ends with the result when a signal cancels the run, and refuses --no-follow without --wait', async () => {
    const id = `cli-stream-int-${Date.now()}`;
    const out = await cli(runArgs(id, 'slow', '--output', 'stream-json'), {
      onStart: (child) => {
        void h.until(id, (s) => s.lastTool === 'shell').then(() => child.kill('SIGINT'));
      },
    });
    expect(out.code).toBe(11);
    expect(lastJson(out.stdout)).toMatchObject({ type: 'result', result: { runId: id, status: 'cancelled' } });
    // The change of state comes before the result, as for a run that ended while followed.
    const lines = out.stdout.trim().split('\n');
    expect(JSON.parse(lines.at(-2)!)).toMatchObject({ type: 'state_changed', from: 'running', to: 'cancelled', cause: 'cancelled by SIGINT in tether run' });
    const noWait = await cli(['run', '--model', 'scripted:quick', '--no-follow', 'x']);
    expect(noWait.code).toBe(2);
    expect(noWait.stderr).toContain('--no-follow is for following a run: use it with --wait');
  });
});

describe('a run Temporal ended from outside', () => {
  it('run --wait on a run terminated through Temporal ends killed with the figures it had, though a worker replaying it would see it going on', async () => {
    const id = `cli-wait-terminated-${Date.now()}`;
    const out = await cli(runArgs(id, 'slow', '--output', 'json'), {
      onStart: () => {
        void h.until(id, (s) => s.lastTool === 'shell').then(() => h.tc.client.workflow.getHandle(id).terminate('by hand, while followed'));
      },
    });
    expect(out.code).toBe(1);
    const result = lastJson(out.stdout);
    expect(result).toMatchObject({ runId: id, status: 'killed', cause: 'terminated: by hand, while followed', steps: 1 });
    expect(result.costUsd).toBeGreaterThan(0);
  });

  it('reads as killed, in status and in lists, though a worker replaying it would see it going on', async () => {
    const id = `cli-terminated-${Date.now()}`;
    await cli(['run', '--id', id, '--model', 'scripted:slow', '--critic', 'off', 'x']);
    await h.until(id, (s) => s.lastTool === 'shell');
    await h.tc.client.workflow.getHandle(id).terminate('by hand');
    const status = lastJson((await cli(['status', id, '--output', 'json'])).stdout);
    expect(status).toMatchObject({ runId: id, state: 'killed', cause: 'terminated: by hand', step: 1 });
    // The tool call the terminate cut off ended with the run: its history does not show it running on.
    const history = (await cli(['history', id])).stdout;
    expect(history).toMatch(/→ cancelled/);
    expect(history).not.toContain('… running');
    const listed = async (state: string) =>
      lastJson((await cli(['list', '--state', state, '--output', 'json'])).stdout).runs as Array<{ runId: string; state: string }>;
    await eventually(
      `run ${id} listed as killed`,
      () => listed('killed'),
      (runs) => runs.some((r) => r.runId === id && r.state === 'killed'),
    );
    expect((await listed('running')).some((r) => r.runId === id)).toBe(false);
    const steer = await cli(['steer', id, 'hello']);
    expect(steer.code).toBe(1);
    expect(steer.stderr).toContain(`run ${id} has already ended (killed)`);
  });
});

describe('the history of a run killed mid-call', () => {
  it('shows the call cancelled with the run, not running forever, and the run ended killed', async () => {
    const id = `cli-killed-mid-call-${Date.now()}`;
    await cli(['run', '--id', id, '--model', 'scripted:slow-model', '--critic', 'off', 'x']);
    await eventually(`run ${id}'s model call to be asked`, () => h.scripted.requestsFor(id).length > 0);
    expect((await cli(['kill', id, '--reason', 'enough'])).code).toBe(0);
    const text = (await cli(['history', id])).stdout;
    expect(text).not.toContain('… running');
    expect(text).toMatch(/→ cancelled/);
    expect(text.trim().split('\n').at(-1)).toBe('ended: killed (enough)');
    const timeline = lastJson((await cli(['history', id, '--timeline', '--output', 'json'])).stdout);
    expect(timeline.spans.find((s: { kind: string }) => s.kind === 'llm')).toMatchObject({ outcome: 'cancelled', endedAt: expect.any(String) });
  });
});

describe('a run started by a plain Temporal client', () => {
  it('lists with its goal, which the run puts in its memo itself', async () => {
    const id = `cli-raw-${Date.now()}`;
    const goal = `a goal only the start event holds ${Date.now()}`;
    const handle = await h.tc.client.workflow.start('agentRun', {
      taskQueue: h.taskQueue,
      workflowId: id,
      args: [{ goal, model: 'scripted:quick', critic: { policy: 'off' } }],
    });
    await handle.result();
    await eventually(
      `run ${id} listed with its goal`,
      async () => (lastJson((await cli(['list', '--output', 'json'])).stdout).runs as Array<{ runId: string; goal: string }>).find((r) => r.runId === id),
      (row) => row?.goal === goal,
    );
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
    // The visibility store is eventually consistent.
    await eventually(
      `run ${id} to be listed`,
      async () => lastJson((await cli(['list', '--output', 'json'])).stdout).runs.some((r: { runId: string }) => r.runId === id),
      Boolean,
      {
        intervalMs: 300,
      },
    );
    const table = await cli(['list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATE\s+STEPS\s+COST\s+MODEL\s+ESTOP\s+AGE\s+GOAL$/);
    expect(table.stdout).toMatch(new RegExp(`${id}.*do the thing`));
  });

  it('tells the story of a run as steps: model calls with tokens and cost, tool calls with arguments, output and duration', async () => {
    const id = `cli-history-${Date.now()}`;
    expect((await cli(runArgs(id, 'quick'))).code).toBe(0);
    const text = (await cli(['history', id])).stdout;
    expect(text.split('\n')[0]).toMatch(/^STEP\s+START\s+TOOK\s+WHAT$/);
    expect(text).toMatch(/^1\s+\S+\s+\d+(ms|\.\ds)\s+model scripted:quick: \d+ in \/ \d+ out tokens, \$\d\.\d{4} → shell$/m);
    expect(text).toMatch(/^1\s+\S+\s+\d+(ms|\.\ds)\s+shell \{"command":"echo hi"\} → ok: hi$/m);
    expect(text).toMatch(/^ended: completed$/m);
    const json = lastJson((await cli(['history', id, '--output', 'json'])).stdout);
    expect(json.executions).toHaveLength(1);
    expect(json.steps.map((s: { kind: string }) => s.kind)).toEqual(['other', 'model', 'tool', 'model']);
    expect(json.steps[2]).toMatchObject({ kind: 'tool', step: 1, tool: 'shell', args: { command: 'echo hi' }, ok: true, output: 'hi', attempts: 1 });
    expect(json.steps[1].inputTokens).toBeGreaterThan(0);
    const raw = await cli(['history', id, '--events']);
    expect(raw.stdout).toContain('ACTIVITY_TASK_SCHEDULED');
  });

  it('shows where the run stopped on its own errors, with no control message before it, and where it went on', async () => {
    const id = `cli-history-trip-${Date.now()}`;
    expect((await cli(['run', '--id', id, '--model', 'scripted:fails-alone', '--critic', 'off', 'x'])).code).toBe(0);
    await eventually(
      `run ${id} to trip its emergency stop`,
      async () => lastJson((await cli(['status', id, '--output', 'json'])).stdout),
      (status) => status.emergencyStop?.active === true,
    );
    const rows = (await cli(['history', id])).stdout.split('\n');
    const tripped = rows.findIndex((row) => /^\s+\S+\s+state → emergency_stopped$/.test(row));
    expect(tripped, rows.join('\n')).toBeGreaterThan(0);
    expect(rows[tripped - 1]).toMatch(/^5\s+.*shell \{"command":"echo attempt 4; exit 3"\} → FAILED: command exited with 3$/);
    expect((await cli(['estop', 'clear', id])).code).toBe(0);
    const json = lastJson((await cli(['history', id, '--output', 'json'])).stdout);
    expect(json.states.map((s: { state: string }) => s.state).slice(0, 2)).toEqual(['emergency_stopped', 'running']);
    expect(json.controls.map((c: { name: string }) => c.name)).toEqual(['clearEmergency']);
    await cli(['kill', id, '--reason', 'test over']);
  });

  it('reads every execution of a run that continued as new', async () => {
    const id = `cli-history-can-${Date.now()}`;
    const spec = `${process.env.TMPDIR ?? '/tmp'}/tether-cli-spec-can-${Date.now()}.json`;
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      spec,
      JSON.stringify({ goal: 'loop', model: 'scripted:many-steps', critic: { policy: 'off' }, limits: { maxSteps: 40, maxHistoryEvents: 200 } }),
    );
    expect((await cli(['run', '--id', id, '--spec', spec, '--wait'])).code).toBe(1);
    const json = lastJson((await cli(['history', id, '--output', 'json'])).stdout);
    expect(json.executions.length).toBeGreaterThan(1);
    const models = json.steps.filter((s: { kind: string }) => s.kind === 'model').map((s: { step: number }) => s.step);
    expect(models).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect((await cli(['history', id])).stdout).toMatch(/— continued as new: execution 2 of \d+ —/);
    // A list shows the run once, as it ended, not each execution it continued from.
    await eventually(
      `run ${id} listed once`,
      async () => (lastJson((await cli(['list', '--output', 'json'])).stdout).runs as Array<{ runId: string; state: string }>).filter((r) => r.runId === id),
      (rows) => rows.length === 1 && rows[0]!.state === 'failed',
    );
  }, 90_000);

  it('shows the validator message and exits non-zero for a bad control message', async () => {
    const id = `cli-bad-${Date.now()}`;
    await cli(['run', '--id', id, '--model', 'scripted:slow', '--critic', 'off', 'x']);
    const out = await cli(['steer', id, ' ', '--output', 'json']);
    expect(out.code).toBe(2);
    expect(lastJson(out.stdout).error.message).toMatch(/steer message must not be empty/);
    expect((await cli(['extend', id, '--by', 'soon'])).code).toBe(2);
    expect((await cli(['extend', id, '--steps', 'many'])).code).toBe(2);
    const estop = await cli(['estop', 'clear', id]);
    expect(estop.code).toBe(1);
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

describe('control verbs in text mode', () => {
  it('confirm in one line what happens now: steer, extend, kill', async () => {
    const id = `cli-confirm-${Date.now()}`;
    await cli(['run', '--id', id, '--model', 'scripted:slow', '--critic', 'off', 'x']);
    await h.until(id, (s) => s.lastTool === 'shell');
    const steer = await cli(['steer', id, 'use', 'the', 'parser']);
    expect(steer.stdout).toBe('queued: the model sees it before its next call (step 2)\n');
    const extend = await cli(['extend', id, '--by', '10m', '--steps', '5']);
    expect(extend.stdout).toMatch(/^extended: deadline \S+.* \(in \d+m\d\ds\), step ceiling 55 \(at step 1\)\n$/);
    const kill = await cli(['kill', id, '--reason', 'wrong approach']);
    expect(kill.stdout).toMatch(new RegExp(`^killed: run ${id} ended killed at step 1 \\(\\$\\d\\.\\d{4}\\): wrong approach\\n$`));
    expect(lastJson((await cli(['status', id, '--output', 'json'])).stdout)).toMatchObject({ state: 'killed' });
  });

  it('reads a 200 000-character steer message from stdin or from --file', async () => {
    const id = `cli-long-steer-${Date.now()}`;
    await cli(['run', '--id', id, '--model', 'scripted:slow', '--critic', 'off', 'x']);
    await h.until(id, (s) => s.lastTool === 'shell');
    const long = 'x'.repeat(200_000);
    expect((await cli(['steer', id, '-'], { stdin: long })).code).toBe(0);
    const file = `${process.env.TMPDIR ?? '/tmp'}/tether-steer-${Date.now()}.txt`;
    const { writeFile } = await import('node:fs/promises');
    await writeFile(file, `y${long}`);
    expect((await cli(['steer', id, '--file', file])).code).toBe(0);
    const none = await cli(['steer', id]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/a steer message is required: as arguments, "-" to read stdin, or --file <path>/);
    await cli(['kill', id, '--reason', 'cleanup']);
  });
});

describe('one exit-code table and honest help', () => {
  it('exits 2 for every usage error and documents the table in --help', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes:\n\s+0 .*\n\s+1 .*\n\s+2 .*invalid input/);
    expect((await cli(['status'])).code).toBe(2);
    expect((await cli(['list', '--no-such-flag'])).code).toBe(2);
    expect((await cli(['kill', 'some-run'])).code).toBe(2);
    expect((await cli(['kill', '--help'])).stdout).toMatch(/--reason <text>\s+why, recorded as the cause \(required\)/);
    // `tether help <verb>` is that verb's help; `tether help` alone the whole; an unknown verb is named, not answered with all of it.
    expect(await cli(['help', 'kill'])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: tether kill/) });
    expect(await cli(['help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('Exit codes:') });
    const unknown = await cli(['help', 'bogus']);
    expect(unknown).toMatchObject({ code: 2, stdout: '', stderr: expect.stringContaining("error: unknown command 'bogus'") });
    const estopHelp = (await cli(['estop', '--help'])).stdout;
    expect(estopHelp).toContain('choices: "trip", "clear", "status"');
    expect(estopHelp).not.toContain('show');
    const show = await cli(['estop', 'show', 'x']);
    expect(show.code).toBe(2);
    expect(show.stderr).toMatch(/Allowed choices are trip, clear, status/);
  });

  it('ends quietly with its own exit code when the reader of its output has gone (`tether list | head -1`)', async () => {
    // `true` exits long before node has started, so every write tether makes meets a closed pipe.
    for (const verb of ['--help', 'list']) {
      const piped = await new Promise<CliRun>((resolve) => {
        const child = spawn('bash', ['-c', `set -o pipefail; '${process.execPath}' '${CLI}' ${verb} | true`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '';
        child.stderr!.on('data', (d) => (stderr += d));
        child.once('close', (code) => resolve({ code, stdout: '', stderr }));
      });
      expect(piped.stderr).not.toMatch(/EPIPE|Error/);
      expect(piped.code).toBe(0);
    }
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

  it('runs the demo on a Temporal server of its own with --exit, exits 0 and leaves nothing running', async () => {
    const [port, uiPort] = [await freePort(), await freePort()];
    const demoEnv = { ...env, TETHER_TASK_QUEUE: `demo-own-${Date.now()}`, TETHER_HOME: await mkdtemp(path.join(os.tmpdir(), 'tether-demo-own-')) };
    const out = await cli(['demo', '--exit', '--port', String(port), '--ui-port', String(uiPort), '--panel-port', '0'], { env: demoEnv });
    // Its own server stopping at the end is the demo ending, not the server dying.
    expect(out.stderr).not.toContain('ended by itself');
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/status:\s+completed/);
    // Its hints reach it from another shell: the port and queue are not the defaults, so they say them.
    const settings = `TEMPORAL_ADDRESS=127.0.0.1:${port} TETHER_TASK_QUEUE=${demoEnv.TETHER_TASK_QUEUE}`;
    expect(out.stderr).toContain(`Other shells     export ${settings}`);
    expect(out.stdout).toMatch(new RegExp(`steps in detail:\\s+${settings} tether history demo-`));
    await eventually(`nothing left listening on ${port}`, () => portFree(port));
  }, 120_000);

  it('reports a service that cannot start as one JSON error with --output json', async () => {
    const out = await cli(['codec-server', '--output', 'json'], { env: { ...env, TETHER_ENCRYPTION_KEY: '', TETHER_ENCRYPTION_KEYS: '' } });
    expect(out.code).toBe(1);
    expect(lastJson(out.stdout).error.message).toMatch(/no key: set TETHER_ENCRYPTION_KEY/);
    const bad = await cli(['worker', '--output', 'yaml']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid --output "yaml"/);
  });
});
