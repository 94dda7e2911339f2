import { parseDuration } from '../api/duration.js';
import { TetherError } from '../client/errors.js';

/** A duration flag's milliseconds, or a usage error that names the flag, checked before the verb connects. */
export function durationOption(value: string, flag: string): number {
  try {
    return parseDuration(value);
  } catch (err) {
    throw new TetherError(`invalid ${flag}: ${(err as Error).message}`, 'invalid');
  }
}
