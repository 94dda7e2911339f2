import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from './definitions.js';
import type { ForkSource } from './fork.js';
import type { ControlInput, ControlName } from './control.js';
import type { ChildEmergency, ChildWait, CriticStatus, EmergencyState, ProgressReport, RunStatus, TranscriptMessage } from './types.js';

/**
 * The handles of every message a run answers, shared by the client and the
 * workflow. Each control message exists as a Signal (fire-and-forget: critics,
 * batch operations, the Temporal UI, which cannot wait for an answer) and as
 * an Update of the same name (operators, who need the validator's error or the
 * new status); both reach one handler in the workflow.
 */
export const controlSignals: { [N in ControlName]: SignalDefinition<[ControlInput<N>], N> } = {
  steer: defineSignal('steer'),
  extend: defineSignal('extend'),
  kill: defineSignal('kill'),
  emergencyStop: defineSignal('emergencyStop'),
  clearEmergency: defineSignal('clearEmergency'),
  approve: defineSignal('approve'),
  answer: defineSignal('answer'),
  decideTool: defineSignal('decideTool'),
};

export const controlUpdates: { [N in ControlName]: UpdateDefinition<RunStatus, [ControlInput<N>], N> } = {
  steer: defineUpdate('steer'),
  extend: defineUpdate('extend'),
  kill: defineUpdate('kill'),
  emergencyStop: defineUpdate('emergencyStop'),
  clearEmergency: defineUpdate('clearEmergency'),
  approve: defineUpdate('approve'),
  answer: defineUpdate('answer'),
  decideTool: defineUpdate('decideTool'),
};

export const statusQuery: QueryDefinition<RunStatus> = defineQuery('status');
export const emergencyStateQuery: QueryDefinition<EmergencyState> = defineQuery('emergencyState');
export const transcriptQuery: QueryDefinition<TranscriptMessage[]> = defineQuery('transcript');
/** A run's transcript as its model calls see it: the epoch (bumped by compaction), the messages, the system prompt. */
export interface ModelContext {
  epoch: number;
  messages: TranscriptMessage[];
  system: string;
}
/**
 * Read by a model call whose worker does not hold the run's transcript (a
 * restarted worker, a call that was not dispatched to the worker holding the
 * run), so the transcript need not be sent whole through the history.
 */
export const modelContextQuery: QueryDefinition<ModelContext> = defineQuery('modelContext');
/** What a fork of the run reads (`tether fork`): its step, spec, transcript and workspace checkpoints, at one moment. */
export const forkSourceQuery: QueryDefinition<ForkSource> = defineQuery('forkSource');

/** Progress the run reports to its critic (a signal, so it lands in the critic's history). */
export const progressSignal = defineSignal<[ProgressReport]>('progress');

/** A critic's account of itself for the run's `status` (critic → run). */
export const criticReportSignal = defineSignal<[CriticStatus]>('criticReport');

/** A delegated child run tells its parent that it, or one of its own, waits on a person, or no longer does (child → parent). */
export const childWaitSignal = defineSignal<[ChildWait]>('childWait');

/** A delegated child run tells its parent at once that it tripped its emergency stop (child → parent). */
export const childEmergencySignal = defineSignal<[ChildEmergency]>('childEmergency');
