import { type AppliedControl, appendAudit, auditEntry, terminateEntry } from '../api/audit.js';
import type { AuditEntry } from '../api/types.js';
import { type RunHistory, readControl } from './run-history.js';

/**
 * A run's audit trail rebuilt from the control messages in its history, for
 * when no worker can replay it (a run terminated while none ran): each
 * message the run took, signed as it was sent. Entries the run makes itself
 * (its loop guard's steer, a stop from the fleet flag at start, a fork's
 * first entry) carry no message and are not in it, nor can a Signal refused
 * for the run's state (a clear with no stop) be told from the history. A
 * terminate, the kill Temporal carried out, ends it. Pure.
 */
export function auditFromHistory(history: RunHistory): AuditEntry[] {
  const trail: AuditEntry[] = [];
  for (const control of history.controls) {
    const read = control.error ? null : readControl(control.name, control.payload, control.via);
    if (read && 'data' in read) appendAudit(trail, auditEntry({ name: read.name, payload: read.data } as AppliedControl, control.at));
  }
  const last = history.executions.at(-1);
  if (last?.end === 'terminated' && last.endedAt !== null) appendAudit(trail, terminateEntry(last.error ?? '', last.endedAt));
  return trail;
}
