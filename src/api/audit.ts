import type { ControlName, ControlPayload } from './control.js';
import { formatDuration } from './duration.js';
import type { AuditEntry } from './types.js';
import { plainUsd } from './money.js';

/** The audit trail keeps the newest entries only, so a run steered all day cannot grow its state (and its continue-as-new input) without bound. */
export const AUDIT_CAP = 200;
/** A steer or an answer can be 500 000 characters; the trail keeps what says what it was. */
const DETAIL_CHARS = 200;

/** A validated control message, narrowed by name. */
export type AppliedControl = { [N in ControlName]: { name: N; payload: ControlPayload<N> } }[ControlName];

/** The audit entry for an applied control message; a message without `audit` came from a raw Temporal client: "unknown". Pure. */
export function auditEntry(control: AppliedControl, nowMs: number): AuditEntry {
  const { audit } = control.payload;
  const detail = auditDetail(control);
  return {
    action: control.name,
    by: audit?.by ?? 'unknown',
    ...(audit?.via ? { via: audit.via } : {}),
    at: new Date(nowMs).toISOString(),
    ...(detail ? { detail: clip(detail) } : {}),
  };
}

/**
 * The entry for a run terminated through Temporal (its UI, its CLI): a kill
 * that is no control message, so the run never saw it to record it. Who sent
 * it is Temporal's to know; Tether reads it as a raw client's: "unknown". Pure.
 */
export function terminateEntry(reason: string, atMs: number): AuditEntry {
  return { action: 'kill', by: 'unknown', at: new Date(atMs).toISOString(), detail: clip(`terminated: ${reason}`) };
}

/** Appends `entry`, dropping the oldest beyond `cap`; the same array, changed in place. */
export function appendAudit(trail: AuditEntry[], entry: AuditEntry, cap = AUDIT_CAP): AuditEntry[] {
  trail.push(entry);
  if (trail.length > cap) trail.splice(0, trail.length - cap);
  return trail;
}

function auditDetail(control: AppliedControl): string | undefined {
  switch (control.name) {
    case 'steer':
      return control.payload.message;
    case 'extend': {
      const { by, steps } = control.payload;
      return [by !== undefined ? `by ${formatDuration(by)}` : '', steps !== undefined ? `+${steps} steps` : ''].filter(Boolean).join(', ');
    }
    case 'kill':
    case 'emergencyStop':
      return control.payload.reason;
    case 'clearEmergency':
      return undefined;
    case 'approve':
      return `+$${plainUsd(control.payload.addBudgetUsd)}`;
    case 'answer':
      return control.payload.text;
    case 'decideTool': {
      const { decision, callId, reason } = control.payload;
      return `${decision} ${callId}${reason ? `: ${reason}` : ''}`;
    }
  }
}

function clip(text: string): string {
  const line = text.trim();
  return line.length > DETAIL_CHARS ? `${line.slice(0, DETAIL_CHARS - 1)}…` : line;
}
