import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { duration } from './duration.js';
import type { CriticStatus, EmergencyState, RunStatus, TranscriptMessage } from './types.js';

/**
 * Control messages. Each exists as a Signal (fire-and-forget: critics, batch
 * operations, the Temporal UI, which cannot wait for an answer) and as an Update
 * of the same name (operators, who need the validator's error or the new status).
 * Both reach one handler in the workflow.
 */
export const controlSchemas = {
  steer: z.strictObject({ message: z.string().trim().min(1, 'steer message must not be empty').max(100_000) }),
  extend: z
    .strictObject({
      by: duration({ min: 1_000, max: 30 * 86_400_000 }).optional(),
      steps: z.number().int().min(1, 'steps must be at least 1').max(1_000_000, 'steps must be at most 1000000').optional(),
    })
    .refine((v) => v.by !== undefined || v.steps !== undefined, 'extend needs "by" (a duration) and/or "steps"'),
  kill: z.strictObject({ reason: z.string().trim().min(1, 'kill needs a reason').max(2_000) }),
  emergencyStop: z.strictObject({ reason: z.string().trim().min(1, 'emergencyStop needs a reason').max(2_000) }),
  clearEmergency: z.strictObject({}),
  approve: z.strictObject({ addBudgetUsd: z.number().positive('addBudgetUsd must be positive').max(1_000_000) }),
  answer: z.strictObject({ text: z.string().trim().min(1, 'answer text must not be empty').max(100_000) }),
} as const;

export type ControlName = keyof typeof controlSchemas;
export const CONTROL_NAMES = Object.keys(controlSchemas) as ControlName[];
export type ControlInput<N extends ControlName> = z.input<(typeof controlSchemas)[N]>;
export type ControlPayload<N extends ControlName> = z.output<(typeof controlSchemas)[N]>;

export const steerSignal = defineSignal<[ControlInput<'steer'>]>('steer');
export const extendSignal = defineSignal<[ControlInput<'extend'>]>('extend');
export const killSignal = defineSignal<[ControlInput<'kill'>]>('kill');
export const emergencyStopSignal = defineSignal<[ControlInput<'emergencyStop'>]>('emergencyStop');
export const clearEmergencySignal = defineSignal<[ControlInput<'clearEmergency'>]>('clearEmergency');
export const approveSignal = defineSignal<[ControlInput<'approve'>]>('approve');
export const answerSignal = defineSignal<[ControlInput<'answer'>]>('answer');

export const steerUpdate = defineUpdate<RunStatus, [ControlInput<'steer'>]>('steer');
export const extendUpdate = defineUpdate<RunStatus, [ControlInput<'extend'>]>('extend');
export const killUpdate = defineUpdate<RunStatus, [ControlInput<'kill'>]>('kill');
export const emergencyStopUpdate = defineUpdate<RunStatus, [ControlInput<'emergencyStop'>]>('emergencyStop');
export const clearEmergencyUpdate = defineUpdate<RunStatus, [ControlInput<'clearEmergency'>]>('clearEmergency');
export const approveUpdate = defineUpdate<RunStatus, [ControlInput<'approve'>]>('approve');
export const answerUpdate = defineUpdate<RunStatus, [ControlInput<'answer'>]>('answer');

export const controlSignals = {
  steer: steerSignal,
  extend: extendSignal,
  kill: killSignal,
  emergencyStop: emergencyStopSignal,
  clearEmergency: clearEmergencySignal,
  approve: approveSignal,
  answer: answerSignal,
} as const;

export const controlUpdates = {
  steer: steerUpdate,
  extend: extendUpdate,
  kill: killUpdate,
  emergencyStop: emergencyStopUpdate,
  clearEmergency: clearEmergencyUpdate,
  approve: approveUpdate,
  answer: answerUpdate,
} as const;

export const statusQuery = defineQuery<RunStatus>('status');
export const emergencyStateQuery = defineQuery<EmergencyState>('emergencyState');
export const transcriptQuery = defineQuery<TranscriptMessage[]>('transcript');

/** Progress the run reports to its critic (a signal, so it lands in the critic's history). */
export interface ProgressReport {
  step: number;
  lastActivityAt: string;
  lastTool: string | null;
  ended?: boolean;
}
export const progressSignal = defineSignal<[ProgressReport]>('progress');

/** Input of the `critic` workflow, started by each run as a child. */
export interface CriticInput {
  runId: string;
  goal: string;
  model: string;
  policy: 'extend-once' | 'llm';
  softTimeoutMs: number;
  /** The model the `llm` policy asks (defaults to the run's). */
  criticModel?: string;
  /** Carried across the critic's own continue-as-new. */
  state?: unknown;
}

/** A critic's account of itself for the run's `status` (critic → run). */
export const criticReportSignal = defineSignal<[CriticStatus]>('criticReport');

/** A delegated child run tells its parent at once that it tripped its emergency stop (child → parent). */
export interface ChildEmergency {
  childId: string;
  reason: string;
  costUsd: number;
}
export const childEmergencySignal = defineSignal<[ChildEmergency]>('childEmergency');
