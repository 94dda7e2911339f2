import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlSignals } from '../src/api/messages.js';
import type { RunSpecInput } from '../src/api/spec.js';
import type { TranscriptMessage } from '../src/api/types.js';
import { controlRun, getTranscript } from '../src/client/runs.js';
import type { Script } from '../src/scripted/script.js';
import { eventually, isDefined } from './helpers/eventually.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { openTimersAtRest } from './helpers/history.js';

const CLI = fileURLToPath(new URL('../bin/tether.js', import.meta.url));
const shell = (command: string) => ({ name: 'shell', args: { command } });
const reply = (...toolCalls: Array<{ name: string; args: Record<string, unknown> }>) => ({ reply: { toolCalls } });
const finish = (summary: string) => reply({ name: 'finish', args: { summary } });

const scripts: Record<string, Script> = {
  'one-write': { steps: [reply(shell('echo original > out.txt')), finish('wrote it')] } as Script,
  'two-at-once': { steps: [reply(shell('echo first > first.txt'), shell('echo second > second.txt')), finish('both decided')] } as Script,
  'delegates-a-write': { steps: [reply({ name: 'delegate', args: { goal: 'write it', model: 'scripted:one-write' } }), finish('delegated')] } as Script,
  'asks-a-question': { steps: [reply({ name: 'ask_user', args: { question: 'which colour?' } }), finish('asked')] } as Script,
  'delegates-a-question': {
    steps: [reply({ name: 'delegate', args: { goal: 'ask it', model: 'scripted:asks-a-question', tools: ['ask_user', 'finish'] } }), finish('delegated')],
  } as Script,
  'safe-then-gated': { steps: [reply(shell('echo safe > safe.txt'), shell('echo gated > gated.txt')), finish('done')] } as Script,
  'writes-a-file': { steps: [reply({ name: 'write_file', args: { path: 'asked.txt', content: 'x' } }), finish('wrote')] } as Script,
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ scripts });
});
afterAll(async () => h?.stop());

const gateShell = [{ tool: 'shell' as const }];

async function startGated(model: string, extra: Partial<RunSpecInput> = {}): Promise<{ runId: string; workspace: string }> {
  const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-approval-'));
  const runId = await h.start({ goal: 'x', model, workspace, approvals: gateShell, critic: { policy: 'off' }, ...extra });
  return { runId, workspace };
}

const toolResults = (transcript: TranscriptMessage[]) => transcript.filter((m): m is Extract<TranscriptMessage, { role: 'tool' }> => m.role === 'tool');
const waiting = (runId: string, callIndex = 0) =>
  h.until(runId, (s) => s.state === 'awaiting_tool_approval' && s.pendingToolCall?.callId.endsWith(`_${callIndex}`) === true);

/** The id of the run's first sub-agent, once it has started. */
function eventuallyChild(runId: string): Promise<string> {
  return eventually(
    `a sub-agent of ${runId} to start`,
    async () => {
      for await (const child of h.tc.client.workflow.list({ query: `ParentWorkflowId = '${runId}'` })) return child.workflowId;
      return undefined;
    },
    isDefined,
  );
}

/** The run's open timers that could go off within `ms`: none while its deadline is suspended. */
async function timersWithin(runId: string, ms: number): Promise<number[]> {
  return (await openTimersAtRest(h.tc.client.workflow.getHandle(runId))).filter((timer) => timer <= ms);
}

describe('tool approval gates', () => {
  it('holds a matching call until it is approved, then runs it as sent', async () => {
    const { runId, workspace } = await startGated('scripted:one-write');
    const held = await waiting(runId);
    expect(held.pendingToolCall).toMatchObject({ tool: 'shell', args: { command: 'echo original > out.txt' } });
    expect(Date.parse(held.pendingToolCall!.requestedAt)).not.toBeNaN();
    // Nothing ran while the call waited.
    await expect(readFile(path.join(workspace, 'out.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    const after = await controlRun(h.tc, runId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'approve' });
    expect(after.pendingToolCall).toBeUndefined();
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'wrote it' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('original\n');
  });

  it('holds a sub-agent’s calls at its parent’s gates: delegating does not get round them', async () => {
    const { runId, workspace } = await startGated('scripted:delegates-a-write', { tools: ['shell', 'delegate', 'finish'] });
    const childId = await eventuallyChild(runId);
    const held = await waiting(childId);
    expect(held.pendingToolCall).toMatchObject({ tool: 'shell', args: { command: 'echo original > out.txt' } });
    await expect(readFile(path.join(workspace, 'out.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    await controlRun(h.tc, childId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'approve' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'delegated' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('original\n');
  });

  it('shows a sub-agent’s held call as its parent’s, suspends the parent’s deadline, and a decision sent to the parent runs it', async () => {
    const { runId, workspace } = await startGated('scripted:delegates-a-write', { tools: ['shell', 'delegate', 'finish'], limits: { maxRuntime: '6s' } });
    const childId = await eventuallyChild(runId);
    const held = await waiting(childId);
    const parent = await waiting(runId);
    expect(parent.pendingToolCall).toEqual(held.pendingToolCall);
    expect(parent.waitingSubAgent).toBe(childId);
    // Its deadline timer was cancelled: nothing times the parent out while the call waits, however long.
    expect(await timersWithin(runId, 6_000)).toEqual([]);
    await expect(controlRun(h.tc, runId, 'decideTool', { callId: 'call_old_0', decision: 'approve' })).rejects.toThrow(/stale callId "call_old_0"/);
    const after = await controlRun(h.tc, runId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'approve', audit: { by: 'ana', via: 'cli' } });
    expect(after.pendingToolCall).toBeUndefined();
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'delegated' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('original\n');
    // The person who decided is on both trails.
    expect((await h.status(childId)).audit).toEqual(expect.arrayContaining([expect.objectContaining({ action: 'decideTool', by: 'ana' })]));
    expect((await h.status(runId)).audit).toEqual(expect.arrayContaining([expect.objectContaining({ action: 'decideTool', by: 'ana' })]));
  }, 60_000);

  it('shows a sub-agent’s question as its parent’s, and an answer sent to the parent reaches it', async () => {
    const runId = await h.start({ goal: 'x', model: 'scripted:delegates-a-question', tools: ['ask_user', 'delegate', 'finish'], critic: { policy: 'off' } });
    const parent = await h.until(runId, (s) => s.state === 'blocked');
    expect(parent.question).toBe('which colour?');
    const childId = parent.waitingSubAgent!;
    expect((await h.status(childId)).state).toBe('blocked');
    await controlRun(h.tc, runId, 'answer', { text: 'teal' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'delegated' });
    expect(toolResults(await getTranscript(h.tc, childId)).find((m) => m.toolName === 'ask_user')?.content).toContain('teal');
  });

  it('ends a sub-agent whose call still waits when its parent is killed, and the call never runs', async () => {
    const { runId, workspace } = await startGated('scripted:delegates-a-write', { tools: ['shell', 'delegate', 'finish'] });
    const childId = await eventuallyChild(runId);
    const held = await waiting(childId);
    await controlRun(h.tc, runId, 'kill', { reason: 'not today' });
    expect(await h.result(runId)).toMatchObject({ status: 'killed' });
    // The kill reached the child (or the parent's close policy ended it): nothing is left to run the held call.
    const child = await h.tc.client.workflow.getHandle(childId).describe();
    expect(['FAILED', 'TERMINATED']).toContain(child.status.name);
    await expect(controlRun(h.tc, childId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'approve' })).rejects.toThrow();
    await expect(readFile(path.join(workspace, 'out.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
  });

  it('runs edited arguments instead, and tells the model they were edited', async () => {
    const { runId, workspace } = await startGated('scripted:one-write');
    const held = await waiting(runId);
    await controlRun(h.tc, runId, 'decideTool', {
      callId: held.pendingToolCall!.callId,
      decision: 'edit',
      args: { command: 'echo edited > out.txt' },
      reason: 'use the edited text',
    });
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('edited\n');
    const [result] = toolResults(await getTranscript(h.tc, runId));
    expect(result!.content).toContain(
      'a person edited the arguments of this call before it ran (use the edited text); it ran with {"command":"echo edited > out.txt"}',
    );
    // The model's next request carried that note.
    const next = h.scripted.requestsFor(runId).find((r) => r.step === 1)!;
    expect(JSON.stringify(next.body.messages)).toContain('a person edited the arguments');
  });

  it('gives the model a denied call as a result with the reason, runs nothing, and goes on', async () => {
    const { runId, workspace } = await startGated('scripted:one-write');
    const held = await waiting(runId);
    await controlRun(h.tc, runId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'deny', reason: 'not in this directory' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'wrote it' });
    await expect(readFile(path.join(workspace, 'out.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    const [result] = toolResults(await getTranscript(h.tc, runId));
    expect(result).toMatchObject({ success: false, toolName: 'shell' });
    expect(result!.content).toContain('not in this directory');
  });

  it('decides several calls of one reply one by one, and refuses a decision for a call already decided', async () => {
    const { runId, workspace } = await startGated('scripted:two-at-once');
    const first = await waiting(runId, 0);
    const firstId = first.pendingToolCall!.callId;
    await controlRun(h.tc, runId, 'decideTool', { callId: firstId, decision: 'approve' });
    const second = await waiting(runId, 1);
    expect(second.pendingToolCall).toMatchObject({ args: { command: 'echo second > second.txt' } });
    expect(await readFile(path.join(workspace, 'first.txt'), 'utf8')).toBe('first\n');
    await expect(controlRun(h.tc, runId, 'decideTool', { callId: firstId, decision: 'approve' })).rejects.toThrow(
      `decideTool: stale callId "${firstId}": the call waiting for approval is "${second.pendingToolCall!.callId}" (shell)`,
    );
    // A stale decision sent as a Signal is dropped: the second call still waits.
    await h.tc.client.workflow.getHandle(runId).signal(controlSignals.decideTool, { callId: firstId, decision: 'approve' });
    expect((await h.status(runId)).pendingToolCall?.callId).toBe(second.pendingToolCall!.callId);
    await controlRun(h.tc, runId, 'decideTool', { callId: second.pendingToolCall!.callId, decision: 'deny', reason: 'one is enough' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'both decided' });
    await expect(readFile(path.join(workspace, 'second.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    await expect(controlRun(h.tc, runId, 'decideTool', { callId: firstId, decision: 'approve' })).rejects.toThrow(/already ended/);
  });

  it('gates only the calls whose arguments match the rule', async () => {
    const { runId, workspace } = await startGated('scripted:safe-then-gated', { approvals: [{ tool: 'shell', match: 'gated' }] });
    const held = await waiting(runId, 1);
    expect(await readFile(path.join(workspace, 'safe.txt'), 'utf8')).toBe('safe\n');
    expect(held.pendingToolCall!.args).toEqual({ command: 'echo gated > gated.txt' });
    await controlRun(h.tc, runId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'approve' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
  });

  it('suspends the deadline while a call waits: nothing times the run out until the call is decided', async () => {
    const { runId } = await startGated('scripted:one-write', { limits: { maxRuntime: '8s' } });
    const held = await waiting(runId);
    expect(await timersWithin(runId, 8_000)).toEqual([]);
    await controlRun(h.tc, runId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'approve' });
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
  }, 60_000);

  it('ends the run timeout when nobody decides within maxPause', async () => {
    const { runId } = await startGated('scripted:one-write', { limits: { maxPause: '2s' } });
    expect(await h.result(runId)).toMatchObject({ status: 'timeout', cause: 'paused (awaiting_tool_approval) longer than maxPause with nobody acting' });
  });

  it('refuses a RunSpec whose match is not a regular expression before it reaches Temporal', async () => {
    await expect(h.start({ goal: 'x', model: 'scripted:one-write', approvals: [{ tool: 'shell', match: '(' }] })).rejects.toThrow(
      /approvals\.0\.match: match is not a valid regular expression/,
    );
  });
});

describe('the CLI', () => {
  it('exits 10 from run --wait while a call waits, printing it, and tether decide approves it', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-approval-cli-'));
    const specFile = path.join(workspace, '..', `${path.basename(workspace)}.spec.json`);
    await writeFile(specFile, JSON.stringify({ approvals: gateShell, workspace }));
    const runId = `approval-cli-${Date.now()}`;
    const run = await cli(
      ['run', '--id', runId, '--model', 'scripted:one-write', '--critic', 'off', '--spec', specFile, '--wait', '--output', 'json', 'write'],
      env,
    );
    expect(run.code).toBe(10);
    expect(run.stderr).toContain('echo original > out.txt');
    expect(run.stderr).toContain(`tether decide ${runId} --approve`);
    const printed = JSON.parse(run.stdout.trim().split('\n').pop()!);
    expect(printed).toMatchObject({ runId, state: 'awaiting_tool_approval', pendingToolCall: { tool: 'shell', args: { command: 'echo original > out.txt' } } });

    const noReason = await cli(['decide', runId, '--deny'], env);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('--deny needs --reason');
    const stale = await cli(['decide', runId, '--approve', '--call', 'call_old_0'], env);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('stale callId "call_old_0"');

    const decided = await cli(['decide', runId, '--approve'], env);
    expect(decided.code).toBe(0);
    expect(decided.stdout).toContain('decided');
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('original\n');
    // Refused as every control message to an ended run is, whether or not the call is named.
    for (const late of [await cli(['decide', runId, '--approve'], env), await cli(['decide', runId, '--approve', '--call', 'call_x'], env)]) {
      expect(late.code).toBe(1);
      expect(late.stderr).toContain(`decideTool: run ${runId} has already ended (completed)`);
    }
  }, 90_000);

  it('exits 10 from run --wait of a run whose sub-agent holds a call, naming the sub-agent, and tether decide on the run approves it', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'tether-approval-cli-'));
    const specFile = path.join(workspace, '..', `${path.basename(workspace)}.spec.json`);
    await writeFile(specFile, JSON.stringify({ approvals: gateShell, workspace, tools: ['shell', 'delegate', 'finish'] }));
    const runId = `approval-cli-parent-${Date.now()}`;
    const run = await cli(
      ['run', '--id', runId, '--model', 'scripted:delegates-a-write', '--critic', 'off', '--spec', specFile, '--wait', '--output', 'json', 'delegate'],
      env,
    );
    expect(run.code).toBe(10);
    expect(run.stderr).toContain('echo original > out.txt');
    expect(run.stderr).toMatch(/holds a tool call for approval \(its sub-agent \S+'s\)/);
    const printed = JSON.parse(run.stdout.trim().split('\n').pop()!);
    expect(printed).toMatchObject({ runId, state: 'awaiting_tool_approval', pendingToolCall: { tool: 'shell' }, waitingSubAgent: expect.any(String) });
    const status = await cli(['status', runId], env);
    expect(status.stdout).toContain(`sub-agent ${printed.waitingSubAgent}`);
    const decided = await cli(['decide', runId, '--approve'], env);
    expect(decided.code).toBe(0);
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'delegated' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('original\n');
  }, 90_000);

  it('shows in history the edited arguments a file tool ran with, not the ones the model asked for', async () => {
    const { runId, workspace } = await startGated('scripted:writes-a-file', { approvals: [{ tool: 'write_file' }] });
    const held = await waiting(runId);
    await controlRun(h.tc, runId, 'decideTool', { callId: held.pendingToolCall!.callId, decision: 'edit', args: { path: 'edited.txt', content: 'y' } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
    expect(await readFile(path.join(workspace, 'edited.txt'), 'utf8')).toBe('y');
    const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const history = JSON.parse((await cli(['history', runId, '--output', 'json'], env)).stdout.trim().split('\n').pop()!) as {
      steps: Array<{ kind: string; tool?: string; args?: unknown }>;
    };
    expect(history.steps.find((s) => s.kind === 'tool' && s.tool === 'write_file')?.args).toEqual({ path: 'edited.txt', content: 'y' });
  });

  it('runs edited arguments given with decide --edit', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: h.address, TETHER_TASK_QUEUE: h.taskQueue };
    const { runId, workspace } = await startGated('scripted:one-write');
    await waiting(runId);
    const badJson = await cli(['decide', runId, '--edit', '{nope'], env);
    expect(badJson.code).toBe(2);
    const decided = await cli(['decide', runId, '--edit', '{"command":"echo from-cli > out.txt"}', '--output', 'json'], env);
    expect(decided.code).toBe(0);
    expect(JSON.parse(decided.stdout.trim().split('\n').pop()!)).toMatchObject({ runId });
    expect(await h.result(runId)).toMatchObject({ status: 'completed' });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('from-cli\n');
  }, 90_000);
});

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr };
}
