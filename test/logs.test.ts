import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/ops/logger.js';
import type { Script } from '../src/scripted/script.js';
import { eventually, isDefined } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';

const SECRET = 'sk-log-test-SECRET-9f8e7d6c5b4a';
const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
const scripts: Record<string, Script> = {
  'fails-at-max': { steps: [], after: { toolCalls: [{ name: 'shell', args: { command: 'true' } }] } } as Script,
  logged: {
    steps: [call('shell', { command: 'exit 2' }), call('write_file', { path: 'a.txt', content: 'a' }), call('finish', { summary: 'logged' })],
  } as Script,
};

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

const out = capture();
const records = () => out.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
const env = { ...process.env, OPENAI_API_KEY: SECRET, TETHER_ENCRYPTION_KEYS: '' };
let h: Harness;
beforeAll(async () => {
  // No workflow cache: every workflow task replays the run from its history, as after a restart.
  h = await startHarness({ scripts, env, worker: { logger: createLogger({ name: 'test', env, destination: out.stream }), maxCachedWorkflows: 0 } });
});
afterAll(async () => h?.stop());

describe('structured logs', () => {
  it('carry the run id, never a secret, and no duplicates when the workflow replays', async () => {
    const runId = await h.start({ goal: 'log me', model: 'scripted:logged', critic: { policy: 'off' } });
    expect((await h.result(runId)).status).toBe('completed');
    // Its end is logged in its last workflow task: the tasks that replayed it logged before, and none runs after.
    const mine = await eventually(
      `run ${runId} to log its end`,
      () => records().filter((r) => r.runId === runId),
      (lines) => lines.some((r) => String(r.msg).startsWith('run ended: completed')),
    );
    expect(mine.filter((r) => String(r.msg).startsWith('run ended: completed'))).toHaveLength(1);
    expect(mine.some((r) => r.activity === 'runTool' || r.activity === 'callModel' || r.workflowType === 'agentRun')).toBe(true);
    expect(out.lines.join('\n')).not.toContain(SECRET);
  });

  it("say why a run's workflow failed: the SDK's error comes with its message, not as {}", async () => {
    const runId = await h.start({ goal: 'fail', model: 'scripted:fails-at-max', critic: { policy: 'off' }, limits: { maxSteps: 1 } });
    expect((await h.result(runId)).status).toBe('failed');
    const failed = await eventually(
      `run ${runId} to log its failure`,
      () => records().find((r) => r.runId === runId && r.msg === 'Workflow failed'),
      isDefined,
    );
    expect(failed.error).toMatchObject({ message: 'maxSteps reached (1)' });
  });

  it('redacts a secret value that reaches a log line anyway', () => {
    const sink = capture();
    createLogger({ name: 'redact', env: { ANTHROPIC_API_KEY: SECRET }, destination: sink.stream }).error(`provider said: bad key ${SECRET}`);
    expect(sink.lines.join('')).toContain('[redacted]');
    expect(sink.lines.join('')).not.toContain(SECRET);
  });
});
