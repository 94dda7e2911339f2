import { z } from 'zod';
import { auditSchema } from './control.js';
import type { FleetState } from './fleet.js';
import type { ChildEmergency, ChildWait, CriticInput, CriticStatus, ProgressReport } from './types.js';

/**
 * The payloads of the messages runs, critics and the fleet exchange among
 * themselves, as zod schemas. Anyone who can reach Temporal can send these
 * Signals and start these workflows with any payload: a workflow validates
 * each one, ignores a bad Signal with a warning and refuses a bad Update, so
 * no payload can fail its workflow task. Pure (zod only), like control.ts.
 *
 * Each exported schema is built on its first use (`z.lazy`): every workflow
 * evaluates this module afresh (the SDK gives each its own module cache), and
 * most never receive most of these messages. Built eagerly they cost every
 * run ~0.25 MB and ~1 ms whether it used them or not.
 */

const isoTime = z.string().max(64);
const text = (max: number) => z.string().max(max);

export const progressReportSchema = z.lazy(() =>
  z.strictObject({
    step: z.number().int().nonnegative(),
    lastActivityAt: isoTime.refine((t) => Number.isFinite(Date.parse(t)), 'lastActivityAt must be a time'),
    lastTool: text(200).nullable(),
    ended: z.boolean().optional(),
    paused: z.boolean().optional(),
  }),
) satisfies z.ZodType<ProgressReport>;

export const criticStatusSchema = z.lazy(() =>
  z.strictObject({
    policy: text(50),
    softTimeoutMs: z.number().nonnegative(),
    nextEscalationAt: isoTime.nullable(),
    decisions: z.array(z.strictObject({ at: isoTime, decision: text(200) })).max(100),
    costUsd: z.number().nonnegative().max(1_000_000).optional(),
  }),
) satisfies z.ZodType<CriticStatus>;

export const childEmergencySchema = z.lazy(() =>
  z.strictObject({
    childId: text(400).min(1),
    reason: text(4_000),
    costUsd: z.number().nonnegative().max(1_000_000),
  }),
) satisfies z.ZodType<ChildEmergency>;

export const childWaitSchema = z.lazy(() =>
  z.strictObject({
    childId: text(400).min(1),
    waiting: z
      .strictObject({
        runId: text(400).min(1),
        question: text(200_000).optional(),
        pendingToolCall: z.strictObject({ callId: text(400).min(1), tool: text(400), args: z.unknown(), requestedAt: isoTime }).optional(),
      })
      .nullable(),
  }),
) satisfies z.ZodType<ChildWait>;

export const criticInputSchema = z.lazy(() =>
  z.strictObject({
    runId: text(400).min(1),
    goal: text(200_000),
    model: text(400),
    policy: z.enum(['extend-once', 'llm']),
    softTimeoutMs: z
      .number()
      .int()
      .min(1)
      .max(30 * 86_400_000),
    criticModel: text(400).optional(),
    maxHistoryEvents: z.number().int().min(200).max(50_000).optional(),
    state: z.unknown().optional(),
  }),
) satisfies z.ZodType<CriticInput>;

/** What a critic carries across its continue-as-new (src/run/critic-watch.ts WatchState, and extend-once's memory). */
export const criticCarrySchema = z.lazy(() =>
  z.strictObject({
    watch: z.strictObject({
      lastActivityMs: z.number(),
      step: z.number().int().nonnegative(),
      lastTool: text(200).nullable(),
      escalatedFor: z.number().nullable(),
      killed: z.boolean(),
      decisions: z.array(z.strictObject({ at: isoTime, decision: text(200) })).max(100),
      // Critics carried before the llm policy counted its cost have none.
      costUsd: z.number().nonnegative().default(0),
      // Critics carried before pauses were reported have none.
      paused: z.boolean().default(false),
    }),
    extended: z.array(text(100)).max(10_000),
  }),
);

const num = z.number().finite();

/**
 * The shape of a run's carried state (src/run/run-types.ts RunSnapshot), field
 * by field where present: runs carried by older versions lack some fields.
 */
const runSnapshotSchema = () =>
  z.looseObject({
    startedAtMs: num.optional(),
    step: z.number().int().nonnegative().optional(),
    transcript: z.array(z.looseObject({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() })).optional(),
    transcriptEpoch: z.number().int().nonnegative().optional(),
    pendingSteers: z.array(z.string()).optional(),
    compactionRetryAtStep: num.nullable().optional(),
    usage: z.looseObject({ inputTokens: num, outputTokens: num, totalTokens: num }).optional(),
    warnings: z.array(z.string()).optional(),
    lastActivityAtMs: num.optional(),
    lastTool: z.string().nullable().optional(),
    verifyAttempts: z.number().int().nonnegative().optional(),
    question: z.string().nullable().optional(),
    answers: z.array(z.string()).optional(),
    children: z.array(z.string()).optional(),
    safety: z.looseObject({}).optional(),
    limits: z.looseObject({ deadlineMs: num, maxSteps: num, pausedAtMs: num.nullable() }).optional(),
    budget: z.looseObject({ budgetUsd: num.nullable(), spentUsd: num, warned: z.array(num) }).optional(),
    continuedAsNew: z.number().int().nonnegative().optional(),
    stuck: z.looseObject({ window: z.array(z.unknown()) }).optional(),
    stuckWarned: z.boolean().optional(),
    critic: criticStatusSchema.optional(),
  });

const forkOfSchema = () => z.strictObject({ runId: text(400), step: z.number().int().nonnegative() });
const checkpointSchema = () => z.looseObject({ step: z.number().int().nonnegative(), commit: text(100) });

/** Where a fork starts (src/api/fork.ts ForkStart): built by `tether fork`, checked like any other input. */
const forkStartSchema = () =>
  z.looseObject({
    of: forkOfSchema(),
    transcript: z.array(z.looseObject({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() })),
    checkpoints: z.array(checkpointSchema()),
    restore: checkpointSchema().optional(),
    steer: z.string().optional(),
    audit: auditSchema.optional(),
  });

/** What a run carries into its next execution (Tether's own second input of agentRun). */
export const agentRunCarrySchema = z.lazy(() =>
  z.strictObject({
    snapshot: runSnapshotSchema().optional(),
    fleetStop: text(2_000).optional(),
    criticStarted: z.boolean().optional(),
    workspaceQueue: text(400).nullable().optional(),
    workspaceOf: text(400).optional(),
    fork: forkStartSchema().optional(),
  }),
);

export const fleetStateSchema = z.lazy(() =>
  z.strictObject({
    active: z.boolean(),
    reason: text(2_000).nullable(),
    since: isoTime.nullable(),
  }),
) satisfies z.ZodType<FleetState>;

export const setFleetStopSchema = z.lazy(() => z.strictObject({ active: z.boolean(), reason: text(2_000).optional() }));

/** One line naming what was wrong with a payload, for a log line or an Update's rejection. */
export function payloadProblem(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(payload)'}: ${i.message}`).join('; ');
}
