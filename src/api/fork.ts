import type { Audit } from './control.js';
import type { RunSpec } from './spec.js';
import { FILE_CHANGING_TOOLS, NOT_RUN } from './tools.js';
import type { TranscriptMessage } from './types.js';

/*
 * Forking a run from one of its steps (docs/fork.md): the shapes the
 * workflow, the client and the panel share, and the pure planning: which
 * transcript prefix step N is, and which checkpoint holds the files as they
 * were after it. The workflow and the client only move data.
 */

/** Where a fork came from: `status.forkOf`. */
export interface ForkOf {
  runId: string;
  step: number;
}

/**
 * The workspace as it was after `step`: a commit in the checkpoint repository
 * of run `runId` (a fork inherits its source's), on the worker polling `queue`
 * (null when workspaces are shared).
 */
export interface Checkpoint {
  step: number;
  commit: string;
  runId: string;
  queue: string | null;
}

/** What a run gives a fork: the `forkSource` query, read in one go so the step, transcript and checkpoints agree. */
export interface ForkSource {
  runId: string;
  step: number;
  spec: RunSpec;
  transcript: TranscriptMessage[];
  checkpoints: Checkpoint[];
  /** Whether the run holds a call for a person's decision: the calls of its latest reply with no result never started. */
  holding?: boolean;
}

/** What a fork starts from (the workflow's `carry.fork`). */
export interface ForkStart {
  of: ForkOf;
  transcript: TranscriptMessage[];
  /** The source's checkpoints up to the fork's step, so a fork of the fork can reach them. */
  checkpoints: Checkpoint[];
  /** The checkpoint whose files the fork's workspace starts with; none when the run never changed its files (a fresh workspace holds them). */
  restore?: Checkpoint;
  steer?: string;
  /** Who asked for the fork: the first entry of the fork's audit trail. */
  audit?: Audit;
}

/** A fork that cannot be made, with the reason in words a person can act on. */
export class ForkRejected extends Error {
  override name = 'ForkRejected';
}

/**
 * Said to the model for a call its run had not finished when the fork was made, so every tool call in the fork's
 * transcript has a result. Such a call was cut short (a kill), was still running (a fork of a run that goes on), or
 * had not started (held for approval, or queued behind one): the fork cannot tell which, so it says so.
 */
export const NOT_COMPLETED =
  'not completed: the original run had no result for this call when this fork was made (it was cut short, still running, or never started). Check the workspace before relying on it.';

/** Plans a fork of `source` at `step`; throws ForkRejected when the step, the transcript or the checkpoints do not allow one. */
export function planFork(source: ForkSource, step: number, steer?: string): ForkStart {
  if (!Number.isInteger(step) || step < 0) throw new ForkRejected(`invalid step ${step}: expected a whole number from 0 to ${source.step}`);
  if (step > source.step) {
    throw new ForkRejected(`step ${step} is beyond the run's length: run ${source.runId} has taken ${source.step} step${source.step === 1 ? '' : 's'}`);
  }
  if (!source.checkpoints.length) {
    const unrecorded = unrecordedFiles(source, step);
    if (unrecorded) throw new ForkRejected(unrecorded);
    // Its files are what a fresh workspace holds: nothing to restore.
    return { of: { runId: source.runId, step }, transcript: transcriptAt(source, step), checkpoints: [], ...(steer ? { steer } : {}) };
  }
  const restore = checkpointAt(source.checkpoints, step);
  if (!restore) throw new ForkRejected(`run ${source.runId} has no checkpoint at or before step ${step}`);
  return {
    of: { runId: source.runId, step },
    transcript: transcriptAt(source, step),
    checkpoints: source.checkpoints.filter((c) => c.step <= step),
    restore,
    ...(steer ? { steer } : {}),
  };
}

/**
 * Why the files of a run without checkpoints at `step` are unknown, or null
 * when they are a fresh workspace's: the run was given no directory of its
 * own, and no call up to that step (of those the transcript still shows
 * whole) could have changed one. A call that never ran (denied, refused, or
 * held for a decision with the calls queued behind it) changed nothing.
 */
function unrecordedFiles(source: ForkSource, step: number): string | null {
  const none = `run ${source.runId} has no checkpoints`;
  if (source.spec.workspace) return `${none}, and it worked in ${source.spec.workspace}, whose files a fork cannot take: a fork gets a workspace of its own`;
  const upTo = stepsUpTo(source, step);
  const results = new Map(upTo.flatMap((m) => (m.role === 'tool' ? [[m.toolCallId, m.content] as const] : [])));
  const lastReply = [...upTo].reverse().find((m) => m.role === 'assistant');
  const ran = (id: string, reply: TranscriptMessage) => {
    const result = results.get(id);
    if (result === undefined) return !(source.holding && reply === lastReply && step === source.step);
    return !result.startsWith(`Error: ${NOT_RUN.denied}`) && !result.startsWith(`Error: ${NOT_RUN.refused}`);
  };
  const changing = upTo.some(
    (m) =>
      (m.role === 'assistant' && m.toolCalls?.some((c) => FILE_CHANGING_TOOLS.has(c.name) && ran(c.id, m))) || (m.role === 'user' && m.source === 'summary'),
  );
  return changing
    ? `${none}: its calls up to step ${step} may have changed its files, but no checkpoint recorded them (it ran before checkpoints, or they failed)`
    : null;
}

/** The latest checkpoint taken at or before `step`: the files as they were after it. */
export function checkpointAt(checkpoints: readonly Checkpoint[], step: number): Checkpoint | undefined {
  let found: Checkpoint | undefined;
  for (const c of checkpoints) if (c.step <= step && (!found || c.step >= found.step)) found = c;
  return found;
}

/**
 * The transcript as the model had it after step `step`. Each step adds
 * exactly one assistant message, so the last assistant message is the
 * source's latest step and earlier ones count back from it (compaction keeps
 * the latest ones). The prefix ends before the next step's reply, without the
 * steers queued for that reply; calls the run never finished get a result.
 */
export function transcriptAt(source: Pick<ForkSource, 'runId' | 'step' | 'transcript'>, step: number): TranscriptMessage[] {
  const prefix = stepsUpTo(source, step);
  while (prefix.length > 1 && isSteer(prefix[prefix.length - 1]!)) prefix.pop();
  return withResults(prefix);
}

/** The transcript up to the end of step `step`: before the next step's reply. */
function stepsUpTo(source: Pick<ForkSource, 'runId' | 'step' | 'transcript'>, step: number): TranscriptMessage[] {
  const replies = source.transcript.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));
  const earliest = source.step - replies.length + 1;
  if (step < source.step && step + 1 < earliest) {
    throw new ForkRejected(
      `run ${source.runId} compacted its steps before ${earliest} into a summary: the earliest step to fork at is ${earliest - 1}, whose transcript is that summary`,
    );
  }
  const end = step < source.step ? replies[step + 1 - earliest]! : source.transcript.length;
  return source.transcript.slice(0, end);
}

function isSteer(m: TranscriptMessage): boolean {
  return m.role === 'user' && m.source === 'steer';
}

/** Gives every tool call of the last reply a result (a run killed mid-step left some without). */
function withResults(messages: TranscriptMessage[]): TranscriptMessage[] {
  let lastReply = messages.length - 1;
  while (lastReply >= 0 && messages[lastReply]!.role !== 'assistant') lastReply--;
  const reply = messages[lastReply];
  if (reply?.role !== 'assistant' || !reply.toolCalls?.length) return messages;
  const answered = new Set(messages.slice(lastReply).flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  const missing = reply.toolCalls.filter((c) => !answered.has(c.id));
  return [...messages, ...missing.map((c) => ({ role: 'tool' as const, toolCallId: c.id, toolName: c.name, content: NOT_COMPLETED, success: false }))];
}

/** The spec of a fork: the source's, with the model swapped when asked, and a workspace of its own. */
export function forkSpec(spec: RunSpec, model?: string): RunSpec {
  const { workspace: _shared, ...rest } = spec;
  return { ...rest, ...(model ? { model } : {}) };
}
