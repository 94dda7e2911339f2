import { type ControlName, controlSchemas } from '../api/control.js';
import { describeIssues } from '../api/spec.js';
import { TetherError } from '../client/errors.js';
import { checkControlSecrets } from '../client/run-start-check.js';

/**
 * Checks a control message with the run's own schema before anything is sent,
 * so a bad payload is a usage error (exit 2) from every verb; the run's
 * validator still judges what depends on its state.
 */
export function validControl(name: ControlName, payload: unknown): unknown {
  const parsed = controlSchemas[name].safeParse(payload);
  if (!parsed.success) throw new TetherError(`${name}: ${describeIssues(parsed.error)}`, 'invalid');
  checkControlSecrets(name, payload);
  return payload;
}
