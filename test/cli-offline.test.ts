import { type CliRun, runCli } from './helpers/cli-process.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../src/scripted/script.js';
import { freePort } from '../src/server/free-port.js';
import { startHarness, type Harness } from './helpers/harness.js';

const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
const scripts: Record<string, Script> = {
  quick: { steps: [call('shell', { command: 'echo hi' }), call('finish', { summary: 'all good' })] } as Script,
};

describe('tether status of a run whose worker is gone', () => {
  let h: Harness | undefined;
  let address: string;
  let runId: string;
  let statusWithWorker: CliRun;
  beforeAll(async () => {
    h = await startHarness({ scripts });
    address = h.address;
    runId = await h.start({ goal: 'say hi and finish', model: 'scripted:quick', limits: { maxSteps: 9 }, critic: { policy: 'off' } });
    expect((await h.result(runId)).status).toBe('completed');
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

  it('answers with the final status, read from the run history', async () => {
    const out = await runCli(['status', runId, '--output', 'json'], { ...process.env, TEMPORAL_ADDRESS: address });
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout.trim())).toMatchObject({
      runId,
      state: 'completed',
      step: 2,
      maxSteps: 9,
      goal: 'say hi and finish',
      model: 'scripted:quick',
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
    for (const args of [['list'], ['status', 'any-run'], ['run', '--model', 'scripted:quick', 'say hi']]) {
      const out = await runCli(args, { ...process.env, TEMPORAL_ADDRESS: address });
      expect(out.code, args.join(' ')).toBe(1);
      expect(out.stderr).toContain(`cannot reach the Temporal server at ${address}`);
      expect(out.stderr).toContain('tether server');
    }
  });
});
