import { mkdtempSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type CliRun, runCli } from './helpers/cli-process.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { controlRun } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { freePort } from '../src/server/free-port.js';
import { startHarness, type Harness } from './helpers/harness.js';

const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
const scripts: Record<string, Script> = {
  quick: { steps: [call('shell', { command: 'echo hi' }), call('finish', { summary: 'all good' })] } as Script,
  asks: { steps: [call('ask_user', { question: 'go on?' }), call('finish', { summary: 'answered' })] } as Script,
};
const asking = { goal: 'ask and wait', model: 'scripted:asks', tools: ['ask_user' as const], critic: { policy: 'off' as const } };

describe('tether status of a run whose worker is gone', () => {
  let h: Harness | undefined;
  let address: string;
  let runId: string;
  let killedId: string;
  let terminatedId: string;
  let statusWithWorker: CliRun;
  beforeAll(async () => {
    h = await startHarness({ scripts });
    address = h.address;
    runId = await h.start({ goal: 'say hi and finish', model: 'scripted:quick', limits: { maxSteps: 9 }, critic: { policy: 'off' } });
    killedId = await h.start(asking);
    terminatedId = await h.start(asking);
    expect((await h.result(runId)).status).toBe('completed');
    await h.until(killedId, (s) => s.state === 'blocked');
    await controlRun(h.tc, killedId, 'kill', { reason: 'no answer coming', audit: { by: 'ops@example', via: 'cli' } });
    expect((await h.result(killedId)).status).toBe('killed');
    await h.until(terminatedId, (s) => s.state === 'blocked');
    await h.tc.client.workflow.getHandle(terminatedId).terminate('by hand');
    statusWithWorker = await runCli(['status', runId, '--output', 'json'], { ...process.env, TEMPORAL_ADDRESS: address });
    // No worker polls the run's task queue from here on: a status query could not be answered.
    await h.stop();
    h = undefined;
  });
  afterAll(async () => h?.stop());

  it('answers in full from the run itself while a worker polls its queue', () => {
    expect(statusWithWorker.code).toBe(0);
    // The last tool is known only to the run: the status query answered, not the history.
    expect(JSON.parse(statusWithWorker.stdout.trim())).toMatchObject({ runId, state: 'completed', step: 2, lastTool: 'finish' });
  });

  it('answers in full with the status the run left in its memo as it ended', async () => {
    const out = await runCli(['status', runId, '--output', 'json'], { ...process.env, TEMPORAL_ADDRESS: address });
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout.trim())).toMatchObject({
      runId,
      state: 'completed',
      step: 2,
      maxSteps: 9,
      lastTool: 'finish',
      goal: 'say hi and finish',
      model: 'scripted:quick',
    });
  });

  it("keeps a killed run's audit trail and cause", async () => {
    const out = await runCli(['status', killedId, '--output', 'json'], { ...process.env, TEMPORAL_ADDRESS: address });
    expect(out.code).toBe(0);
    const status = JSON.parse(out.stdout.trim());
    expect(status).toMatchObject({ runId: killedId, state: 'killed', lastTool: 'ask_user' });
    expect(status.cause).toContain('no answer coming');
    expect(status.audit).toEqual([expect.objectContaining({ action: 'kill', by: 'ops@example', via: 'cli' })]);
  });

  it('reads a run that could leave no status (terminated) from its history', async () => {
    const out = await runCli(['status', terminatedId, '--output', 'json'], { ...process.env, TEMPORAL_ADDRESS: address });
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout.trim())).toMatchObject({
      runId: terminatedId,
      state: 'killed',
      cause: 'terminated: by hand',
      lastTool: null,
      goal: 'ask and wait',
    });
  });

  it('shows it as text too, with the cost of each step', async () => {
    const out = await runCli(['status', runId], { ...process.env, TEMPORAL_ADDRESS: address });
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/state:\s+completed/);
    expect(out.stdout).toMatch(/step:\s+2 \/ 9/);
    expect(out.stdout).toMatch(/cost\/step:/);
  });
});

describe('a Temporal server that is not running', () => {
  it('is reported with its address and how to start one, for a verb that reads and one that writes', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    for (const args of [['list'], ['status', 'any-run'], ['run', '--model', 'scripted:quick', 'say hi'], ['worker', '--metrics-port', '0']]) {
      const out = await runCli(args, { ...process.env, TEMPORAL_ADDRESS: address });
      expect(out.code, args.join(' ')).toBe(1);
      expect(out.stderr).toContain(`cannot reach the Temporal server at ${address}`);
      // Started where the address says: on its port.
      expect(out.stderr).toContain(`tether server --port ${address.split(':')[1]}`);
    }
  });

  it('nor is a namespace the server does not have: the worker and a verb name it and how to create it', async () => {
    for (const args of [['worker', '--metrics-port', '0'], ['list']]) {
      const out = await runCli(args, { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: 'no-such-namespace' });
      expect(out.code, args.join(' ')).toBe(1);
      expect(out.stderr).toContain(
        'namespace no-such-namespace does not exist on this Temporal server: set TEMPORAL_NAMESPACE to one that does, or create it (temporal operator namespace create --namespace no-such-namespace)',
      );
      expect(out.stderr).not.toContain('Status {');
    }
  });

  it('has tether worker refuse a bad setting at once, before it holds a connection that would keep it running', async () => {
    for (const [setting, said] of [
      [{ TETHER_ENCRYPTION_KEY: 'short' }, 'TETHER_ENCRYPTION_KEY must be base64 of 32 bytes for AES-256'],
      [{ TETHER_WORKER_WORKFLOW_TASK_SLOTS: 'abc' }, 'TETHER_WORKER_WORKFLOW_TASK_SLOTS must be a whole number of at least 2, got "abc"'],
    ] as const) {
      const out = await runCli(['worker', '--metrics-port', '0'], { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), ...setting });
      expect(out.code, said).toBe(1);
      expect(out.stderr).toContain(said);
      expect(out.stderr).not.toContain('something kept the process alive');
    }
  });

  it('nor is an address that takes the connection and never answers: the worker and a verb give up on it, and say so', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      for (const args of [['worker', '--metrics-port', '0'], ['list']]) {
        const out = await runCli(args, { ...process.env, TEMPORAL_ADDRESS: address });
        expect(out.code, args.join(' ')).toBe(1);
        expect(out.stderr).toContain(`cannot reach the Temporal server at ${address} (Failed to connect before the deadline)`);
      }
    } finally {
      silent.close();
    }
  });

  it('does not hide bad input behind it: every verb checks what was typed first, and says what is wrong (exit 2)', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const key = 'sk-offline-test-4f9c2a7b1e';
    const specs = mkdtempSync(path.join(os.tmpdir(), 'tether-offline-specs-'));
    const spec = (name: string, json: string) => {
      writeFileSync(path.join(specs, name), json);
      return path.join(specs, name);
    };
    const cases: [string[], string][] = [
      [['run', '--spec', spec('null.json', 'null')], 'a RunSpec is a JSON object, not null'],
      [['run', '--spec', spec('array.json', '[]')], 'a RunSpec is a JSON object, not an array'],
      [['run', '--spec', spec('text.json', '"do it"')], 'a RunSpec is a JSON object, not a string'],
      [['steer', 'r1', 'hi', '--as', ''], '--as: audit.by must not be empty'],
      [['fork', 'r1', '--at-step', '1', '--as', 'a\nb'], '--as must not contain control characters'],
      [['estop', 'trip', '--all', '--as', 'x'.repeat(201)], '--as: Too big'],
      [['run', '--model', 'scripted:quick', '--max-runtime', 'soon', 'say hi'], 'maxRuntime'],
      [['run', '--model', 'gpt-4', 'say hi'], 'provider:name'],
      [['run', '--model', 'scripted:quick', '--max-steps', '0', 'say hi'], 'maxSteps'],
      [['run', '--model', 'scripted:quick', '--id', 'no spaces please', 'say hi'], 'invalid run id'],
      [['run', '--model', 'scripted:quick', `use ${key} to call the API`], 'OFFLINE_TEST_API_KEY'],
      [['run', '--model', 'scripted:quick', '--id', `run-${key}`, 'say hi'], 'invalid run id: it contains the value of the secret OFFLINE_TEST_API_KEY'],
      [['fork', 'r1', '--at-step', '1', '--id', key], 'invalid run id: it contains the value of the secret OFFLINE_TEST_API_KEY'],
      [['run', '--model', `openai:${'x'.repeat(3_000)}`, 'say hi'], 'model may be at most 200 characters'],
      [['run', '--model', 'scripted:quick', '--tools', 'shell,teleport', 'say hi'], 'tool "teleport" is not one of'],
      [['run', '--model', 'scripted:quick', '--critic', 'strict', 'say hi'], 'critic policy "strict" is not one of'],
      [['extend', 'r1', '--by', '-5m'], 'by'],
      [['extend', 'r1'], 'extend needs'],
      [['steer', 'r1', '   '], 'must not be empty'],
      [['kill', 'r1', '--reason', ''], 'kill needs a reason'],
      [['approve', 'r1', '--add-usd', '-1'], 'addBudgetUsd must be positive'],
      [['estop', 'trip', 'r1', '--all'], 'not both'],
      [['estop', 'clear'], 'needs a run id, or --all'],
      [['estop', 'status', 'r1', '--all'], 'not both'],
      [['decide', 'r1', '--approve', '--deny'], 'exactly one of'],
      [['decide', 'r1', '--edit', '[1]'], 'JSON object'],
      [['fork', 'r1', '--at-step', 'two'], 'invalid --at-step'],
      [['fork', 'r1', '--at-step', '1', '--model', 'mystery'], 'provider:name'],
      [['fork', 'r1', '--at-step', '1', '--id', '../etc'], 'invalid run id'],
      [['list', '--state', 'sleeping'], 'unknown state "sleeping"'],
      [['list', '--limit', 'all'], 'invalid --limit'],
      [['worker', '--metrics-port', '0', '--shutdown-grace', 'abc'], 'invalid --shutdown-grace: invalid duration "abc"'],
      [['worker', '--metrics-port', '0', '--shutdown-grace', '-1'], 'invalid --shutdown-grace'],
      [['history', 'r1', '--events', '--timeline'], 'pick one of --events, --timeline'],
      [['run', '--model', 'scripted:quick', '--verify', '', 'say hi'], 'verify.command must not be empty'],
      [['run', '--model', 'scripted:quick', '--max-steps', '', 'say hi'], 'invalid --max-steps ""'],
      [['run', '--model', 'scripted:quick', '--detach-on-interrupt', 'say hi'], 'use it with --wait'],
      [['fork', 'r1', '--at-step', '1', '--steer', '  '], '--steer must not be empty'],
    ];
    const env = { ...process.env, TEMPORAL_ADDRESS: address, OFFLINE_TEST_API_KEY: key };
    const outs = await Promise.all(cases.map(([args]) => runCli(args, env)));
    cases.forEach(([args, expected], i) => {
      const out = outs[i]!;
      expect({ args, code: out.code }).toEqual({ args, code: 2 });
      expect(out.stderr, args.join(' ')).toContain(expected);
      expect(out.stderr, args.join(' ')).not.toContain('cannot reach');
    });
  });

  it('answers a usage error commander finds (a missing option or argument, an unknown flag) as JSON too when JSON was asked for', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` };
    const cases: [string[], string][] = [
      [['kill', 'r1', '--output', 'json'], "required option '--reason <text>' not specified"],
      [['status', '--output=json'], "missing required argument 'id'"],
      [['status', 'r1', '--bogus', '--output', 'json'], "unknown option '--bogus'"],
      [['run', '--wait', '--output', 'stream-json', '--max-steps'], "option '--max-steps <n>' argument missing"],
      [['help', 'bogus', '--output', 'json'], "unknown command 'bogus'"],
    ];
    for (const [args, message] of cases) {
      const out = await runCli(args, env);
      expect({ args, code: out.code }).toEqual({ args, code: 2 });
      expect(JSON.parse(out.stdout.trim().split('\n').pop()!), args.join(' ')).toEqual({ error: { code: 'invalid', message } });
    }
    expect((await runCli(['kill', 'r1'], env)).stdout).toBe('');
  });
});
