import { z } from 'zod';
import { duration } from './duration.js';

/** What a person may decide about a tool call waiting for approval. */
export const TOOL_DECISIONS = ['approve', 'deny', 'edit'] as const;
export type ToolDecisionKind = (typeof TOOL_DECISIONS)[number];

/** Where a control message came from: the CLI, the panel, the critic, or the run itself (its loop guard, a parent, the fleet flag). */
export const AUDIT_VIAS = ['cli', 'panel', 'critic', 'run'] as const;
export type AuditVia = (typeof AUDIT_VIAS)[number];

/**
 * Who sent a control message, carried in the message so it lands in the run's
 * history. Optional: a raw Temporal client that leaves it out shows as "unknown".
 */
export const auditSchema = z.strictObject({
  by: z.string().trim().min(1, 'audit.by must not be empty').max(200),
  via: z.enum(AUDIT_VIAS, { error: 'audit.via must be "cli", "panel", "critic" or "run"' }).optional(),
});
export type Audit = z.output<typeof auditSchema>;
const audit = auditSchema.optional();

/**
 * The payloads of the control messages, as zod schemas. Pure (zod only), so
 * the run's state machine validates with them without loading Temporal; the
 * Signal and Update handles built on them live in messages.ts. Each is built
 * on its first use (`z.lazy`), as in message-schemas.ts: every workflow
 * evaluates this module afresh, and most runs are never steered or killed.
 */
/** What a run answers a stop while stopped, and a clear while not: the run is already as asked. */
export const ESTOP_ALREADY_ACTIVE = 'Emergency stop is already active';
export const ESTOP_NOT_ACTIVE = 'Emergency stop is not active';

/** What a stop sent with no reason records. */
export const NO_REASON = 'emergency stop (no reason given)';
const MAX_REASON_CHARS = 2_000;

/** A reason cut to the length every stop and kill accepts, marked as cut. */
export function fitReason(reason: string): string {
  return reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS - 1)}…` : reason;
}

/**
 * A stop or kill sent as a Signal cannot be told its reason was refused. A
 * stop halts the run whatever its reason says: a reason that is missing,
 * blank or too long is replaced or cut, and the stop happens. A kill cannot
 * be undone: one with no reason stays refused, and only a reason too long is
 * cut. Anything else wrong with the message still drops it; an Update is
 * refused with the validator's message.
 */
export function salvageSafetySignal(name: ControlName, payload: unknown): unknown {
  if ((name !== 'kill' && name !== 'emergencyStop') || payload === null || typeof payload !== 'object' || Array.isArray(payload)) return payload;
  const { reason } = payload as { reason?: unknown };
  const said = typeof reason === 'string' ? reason.trim() : '';
  if (said.length > MAX_REASON_CHARS) return { ...payload, reason: fitReason(said) };
  if (name === 'emergencyStop' && !said) return { ...payload, reason: NO_REASON };
  return payload;
}

/**
 * A stop sent as a Signal with no payload, a payload that is not an object, or
 * fields nobody asked for (the Temporal UI's bare "Signal" button, a script's
 * `{"reason": …, "force": true}`) still stops the run: a stop can be cleared,
 * and anyone who can send it a Signal can also terminate it. A kill keeps its
 * reason and audit and loses the rest; with no reason it stays refused. The
 * result goes on to salvageSafetySignal.
 */
export function salvageStopSignal(name: ControlName, payload: unknown): unknown {
  if (name !== 'kill' && name !== 'emergencyStop') return payload;
  const isObject = payload !== null && typeof payload === 'object' && !Array.isArray(payload);
  if (!isObject) return name === 'emergencyStop' ? { reason: NO_REASON } : payload;
  const { reason, audit } = payload as { reason?: unknown; audit?: unknown };
  const known = { ...(reason !== undefined ? { reason } : {}), ...(audit !== undefined ? { audit } : {}) };
  return Object.keys(known).length === Object.keys(payload).length ? payload : known;
}

/**
 * A Signal's `audit` is optional metadata: one that does not read (an unknown
 * key, a bad `via`) must not cost the message itself, since a Signal cannot be
 * told it was refused, and a lost kill or stop is a safety problem. What reads
 * of it is kept (`by`, and `via` if it reads too), or it is left out and the
 * sender shows as unknown.
 */
export function salvageSignalAudit(payload: unknown): unknown {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || !('audit' in payload)) return payload;
  const { audit: sent, ...rest } = payload as { audit: unknown };
  if (auditSchema.safeParse(sent).success || sent === undefined) return payload;
  const { by, via } = (sent ?? {}) as { by?: unknown; via?: unknown };
  const kept = [{ by, via }, { by }].find((candidate) => auditSchema.safeParse(candidate).success);
  return kept ? { ...rest, audit: kept } : rest;
}

/** What the run does with a control message sent as a Signal before it validates it: the salvage of the three functions above. */
export function salvageSignal(name: ControlName, payload: unknown): unknown {
  return salvageSignalAudit(salvageSafetySignal(name, salvageStopSignal(name, payload)));
}

export const controlSchemas = {
  // 500 000 characters stay under Temporal's 2 MB payload limit even at 4 bytes a character.
  steer: z.lazy(() => z.strictObject({ message: z.string().trim().min(1, 'steer message must not be empty').max(500_000), audit })),
  extend: z.lazy(() =>
    z
      .strictObject({
        by: duration({ min: 1_000, max: 30 * 86_400_000 }).optional(),
        steps: z.number().int('steps must be a whole number').min(1, 'steps must be at least 1').max(1_000_000, 'steps must be at most 1000000').optional(),
        audit,
      })
      .refine((v) => v.by !== undefined || v.steps !== undefined, 'extend needs "by" (a duration) and/or "steps"'),
  ),
  kill: z.lazy(() => z.strictObject({ reason: z.string().trim().min(1, 'kill needs a reason').max(MAX_REASON_CHARS), audit })),
  // A stop needs no reason to halt the run: one is recorded for it.
  emergencyStop: z.lazy(() =>
    z.strictObject({
      reason: z.string().trim().min(1, 'emergencyStop reason must not be empty (leave it out to give none)').max(MAX_REASON_CHARS).default(NO_REASON),
      audit,
    }),
  ),
  clearEmergency: z.lazy(() => z.strictObject({ audit })),
  approve: z.lazy(() => z.strictObject({ addBudgetUsd: z.number().positive('addBudgetUsd must be positive').max(1_000_000), audit })),
  answer: z.lazy(() => z.strictObject({ text: z.string().trim().min(1, 'answer text must not be empty').max(100_000), audit })),
  // An Update gives the caller the reason a decision was refused (a stale callId, edited args the tool rejects).
  decideTool: z.lazy(() =>
    z
      .strictObject({
        callId: z.string().min(1, 'callId must not be empty').max(1_000),
        decision: z.enum(TOOL_DECISIONS, { error: 'decision must be "approve", "deny" or "edit"' }),
        args: z.record(z.string(), z.unknown(), { error: 'args must be a JSON object' }).optional(),
        reason: z.string().trim().max(2_000).optional(),
        audit,
      })
      .refine((v) => v.decision !== 'edit' || v.args !== undefined, 'decision "edit" needs "args": the arguments to run the call with')
      .refine((v) => v.decision === 'edit' || v.args === undefined, '"args" goes only with decision "edit"'),
  ),
} as const;

export type ControlName = keyof typeof controlSchemas;
export const CONTROL_NAMES = Object.keys(controlSchemas) as ControlName[];
/** What a sender writes (durations as strings). */
export type ControlInput<N extends ControlName> = z.input<(typeof controlSchemas)[N]>;
/** What the run applies once validated (durations in milliseconds). */
export type ControlPayload<N extends ControlName> = z.output<(typeof controlSchemas)[N]>;
/** One control message with its payload, as a union the compiler can narrow on `name`. */
export type ControlMessage<N extends ControlName = ControlName> = { [K in N]: { name: K; payload: ControlInput<K> } }[N];
