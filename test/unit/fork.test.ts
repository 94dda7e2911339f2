import { describe, expect, it } from 'vitest';
import { type Checkpoint, checkpointAt, type ForkSource, forkSpec, NOT_COMPLETED, planFork, transcriptAt } from '../../src/api/fork.js';
import { parseRunSpec } from '../../src/api/spec.js';
import type { TranscriptMessage } from '../../src/api/types.js';
import { forkSnapshot } from '../../src/run/fork.js';
import { RunState } from '../../src/run/run-state.js';

const T0 = Date.UTC(2026, 0, 1);
const spec = parseRunSpec({ goal: 'the goal', model: 'scripted:x', workspace: '/srv/ws', limits: { maxSteps: 10 } });

const goal: TranscriptMessage = { role: 'user', content: 'the goal', source: 'goal' };
const reply = (n: number): TranscriptMessage => ({
  role: 'assistant',
  content: `step ${n}`,
  toolCalls: [{ id: `c${n}`, name: 'shell', args: { command: `echo ${n}` } }],
});
const result = (n: number): TranscriptMessage => ({ role: 'tool', toolCallId: `c${n}`, toolName: 'shell', content: `out ${n}`, success: true });
const failedResult = (n: number, content: string): TranscriptMessage => ({ role: 'tool', toolCallId: `c${n}`, toolName: 'shell', content, success: false });
const steer = (text: string): TranscriptMessage => ({ role: 'user', content: text, source: 'steer' });
const cp = (step: number, commit = `commit-${step}`): Checkpoint => ({ step, commit, runId: 'orig', queue: 'q@a' });

/** A run of `steps` steps, each one shell call and its result. */
function source(steps: number, extra: Partial<ForkSource> = {}): ForkSource {
  const transcript = [goal];
  for (let n = 1; n <= steps; n++) transcript.push(reply(n), result(n));
  return { runId: 'orig', step: steps, spec, transcript, checkpoints: [cp(0), cp(1), cp(3)], ...extra };
}

const contents = (messages: TranscriptMessage[]) => messages.map((m) => m.content);

describe('the transcript of step N', () => {
  it('is everything up to the reply of step N+1', () => {
    expect(contents(transcriptAt(source(3), 2))).toEqual(['the goal', 'step 1', 'out 1', 'step 2', 'out 2']);
  });

  it('is the whole transcript at the last step, and the goal alone at step 0', () => {
    expect(transcriptAt(source(3), 3)).toEqual(source(3).transcript);
    expect(contents(transcriptAt(source(3), 0))).toEqual(['the goal']);
  });

  it('leaves out steers that were queued for the next step, and keeps those the step read', () => {
    const run = source(2);
    run.transcript.splice(3, 0, steer('read by step 2'));
    run.transcript.push(steer('for step 3'));
    expect(contents(transcriptAt(run, 1))).toEqual(['the goal', 'step 1', 'out 1']);
    expect(contents(transcriptAt(run, 2)).slice(-1)).toEqual(['out 2']);
  });

  it('counts steps back from the latest after compaction, and refuses the steps summarised away', () => {
    const summary: TranscriptMessage = { role: 'user', content: 'steps 1-3 summarised', source: 'summary' };
    const run: ForkSource = { ...source(0), step: 5, transcript: [goal, summary, reply(4), result(4), reply(5), result(5)] };
    expect(contents(transcriptAt(run, 4))).toEqual(['the goal', 'steps 1-3 summarised', 'step 4', 'out 4']);
    expect(contents(transcriptAt(run, 3))).toEqual(['the goal', 'steps 1-3 summarised']);
    expect(() => transcriptAt(run, 2)).toThrow(
      'run orig compacted its steps before 4 into a summary: the earliest step to fork at is 3, whose transcript is that summary',
    );
  });

  it('gives the calls a killed step never finished a result, so the model can go on', () => {
    const run = source(2);
    run.transcript.pop();
    const prefix = transcriptAt(run, 2);
    expect(prefix.at(-1)).toEqual({ role: 'tool', toolCallId: 'c2', toolName: 'shell', content: NOT_COMPLETED, success: false });
  });
});

describe('the checkpoint of step N', () => {
  it('is the latest taken at or before N', () => {
    const list = [cp(0), cp(1), cp(3)];
    expect([0, 1, 2, 3, 9].map((n) => checkpointAt(list, n)?.step)).toEqual([0, 1, 1, 3, 3]);
    expect(checkpointAt([cp(2)], 1)).toBeUndefined();
  });
});

describe('planning a fork', () => {
  it('takes the transcript, the checkpoint to restore and the checkpoints a fork of the fork may need', () => {
    const start = planFork(source(3), 2, 'try another way');
    expect(start.of).toEqual({ runId: 'orig', step: 2 });
    expect(start.restore).toEqual(cp(1));
    expect(start.checkpoints.map((c) => c.step)).toEqual([0, 1]);
    expect(start.steer).toBe('try another way');
    expect(start.transcript).toHaveLength(5);
  });

  it('refuses a step beyond the run, a negative or fractional step, and a run without checkpoints, saying why', () => {
    expect(() => planFork(source(3), 4)).toThrow("step 4 is beyond the run's length: run orig has taken 3 steps");
    expect(() => planFork(source(1), 2)).toThrow('has taken 1 step');
    expect(() => planFork(source(3), -1)).toThrow('invalid step -1: expected a whole number from 0 to 3');
    expect(() => planFork(source(3), 1.5)).toThrow('invalid step 1.5');
    expect(() => planFork(source(3, { checkpoints: [] }), 1)).toThrow('run orig has no checkpoints, and it worked in /srv/ws');
    const ownWorkspace = parseRunSpec({ goal: 'the goal', model: 'scripted:x' });
    expect(() => planFork(source(3, { checkpoints: [], spec: ownWorkspace }), 1)).toThrow(
      'its calls up to step 1 may have changed its files, but no checkpoint recorded them',
    );
    expect(() => planFork(source(3, { checkpoints: [cp(2)] }), 1)).toThrow('no checkpoint at or before step 1');
  });

  it('starts a fork without checkpoints from a fresh workspace where no call up to its step ran: step 0, denied or refused calls, a held call and those queued behind it', () => {
    const ownWorkspace = parseRunSpec({ goal: 'the goal', model: 'scripted:x' });
    const fresh = (run: ForkSource, step: number) => expect(planFork(run, step).restore).toBeUndefined();
    // Step 0 is the goal alone, whatever the run did after it.
    fresh(source(3, { checkpoints: [], spec: ownWorkspace }), 0);
    const denied = failedResult(1, 'Error: denied: a person refused this call (never). It did not run.');
    const refused = failedResult(2, 'Error: not run: the run is emergency_stopped');
    const decided: ForkSource = { ...source(0), spec: ownWorkspace, checkpoints: [], step: 2, transcript: [goal, reply(1), denied, reply(2), refused] };
    fresh(decided, 2);
    // Held at its last step, its calls have no result: the held one and the one queued behind it never started.
    const twoCalls: TranscriptMessage = {
      role: 'assistant',
      content: 'step 1',
      toolCalls: [
        { id: 'c1', name: 'shell', args: { command: 'echo 1' } },
        { id: 'c1b', name: 'write_file', args: { path: 'a', content: 'b' } },
      ],
    };
    const held: ForkSource = { ...source(0), spec: ownWorkspace, checkpoints: [], step: 1, transcript: [goal, twoCalls], holding: true };
    fresh(held, 1);
    // The same calls cut short by a kill may have changed the files; so may one that ran and failed.
    expect(() => planFork({ ...held, holding: false }, 1)).toThrow('its calls up to step 1 may have changed its files');
    const failed: ForkSource = { ...decided, transcript: [goal, reply(1), failedResult(1, 'Error: exit 1')], step: 1 };
    expect(() => planFork(failed, 1)).toThrow('its calls up to step 1 may have changed its files');
  });

  it('starts a fork of a run that never touched its files from a fresh workspace, with nothing to restore', () => {
    const talk: TranscriptMessage[] = [goal, { role: 'assistant', content: 'just talking' }, steer('go on'), { role: 'assistant', content: 'still talking' }];
    const quiet: ForkSource = { runId: 'orig', step: 2, spec: parseRunSpec({ goal: 'the goal', model: 'scripted:x' }), transcript: talk, checkpoints: [] };
    const start = planFork(quiet, 0, 'try another way');
    expect(start).toEqual({ of: { runId: 'orig', step: 0 }, transcript: [goal], checkpoints: [], steer: 'try another way' });
    expect(planFork(quiet, 1).transcript.map((m) => m.content)).toEqual(['the goal', 'just talking']);
  });

  it('gives the fork a workspace of its own and the model it asks for', () => {
    expect(forkSpec(spec).workspace).toBeUndefined();
    expect(forkSpec(spec).model).toBe('scripted:x');
    expect(forkSpec(spec, 'openai:gpt-4.1-mini').model).toBe('openai:gpt-4.1-mini');
  });
});

describe('the state a fork starts in', () => {
  it('is at the fork step with the inherited transcript, the steer queued, a full step budget on top, and forkOf in its status', () => {
    const start = planFork(source(3), 2, 'nudge');
    const fresh = new RunState('fork-1', spec, T0, T0 + 60_000);
    const run = new RunState('fork-1', spec, T0, T0 + 60_000, forkSnapshot(fresh.snapshot(), start));
    expect(run.step).toBe(2);
    expect(run.limits.steps).toBe(12);
    expect(run.transcript).toEqual(start.transcript);
    expect(run.takeSteers()).toEqual(['nudge']);
    expect(run.status(T0).forkOf).toEqual({ runId: 'orig', step: 2 });
    expect(run.forkSource().checkpoints).toEqual(start.checkpoints);
  });

  it('starts its audit trail with who forked it, from where, and the steer', () => {
    const start = { ...planFork(source(3), 2, 'try the other way'), audit: { by: 'ann', via: 'cli' as const } };
    const fresh = new RunState('fork-1', spec, T0, T0 + 60_000);
    const run = new RunState('fork-1', spec, T0, T0 + 60_000, forkSnapshot(fresh.snapshot(), start));
    expect(run.status(T0).audit).toEqual([
      { action: 'fork', by: 'ann', via: 'cli', at: new Date(T0).toISOString(), detail: 'from orig at step 2, steer: try the other way' },
    ]);
  });

  it('carries forkOf and the checkpoints across continue-as-new', () => {
    const fresh = new RunState('fork-1', spec, T0, T0 + 60_000);
    const run = new RunState('fork-1', spec, T0, T0 + 60_000, forkSnapshot(fresh.snapshot(), planFork(source(3), 3)));
    const next = new RunState('fork-1', spec, T0, 0, JSON.parse(JSON.stringify(run.carryOver())));
    expect(next.status(T0).forkOf).toEqual({ runId: 'orig', step: 3 });
    expect(next.forkSource().checkpoints.map((c) => c.step)).toEqual([0, 1, 3]);
  });
});

describe('recording checkpoints', () => {
  it('keeps the last of each step, records the baseline as step 0 once, and names this run and its worker', () => {
    const run = new RunState('run-1', spec, T0, T0 + 60_000);
    run.recordModelReply({ text: '', toolCalls: [], usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, costUsd: 0, warnings: [] }, T0);
    run.recordCheckpoint({ commit: 'a', baseline: 'base' }, 'q@w');
    run.recordCheckpoint({ commit: 'b', baseline: 'ignored' }, 'q@w');
    expect(run.forkSource().checkpoints).toEqual([
      { step: 0, commit: 'base', runId: 'run-1', queue: 'q@w' },
      { step: 1, commit: 'b', runId: 'run-1', queue: 'q@w' },
    ]);
  });
});
