import { readFileSync } from 'node:fs';
import { TetherError } from '../client/errors.js';

/**
 * A message's text from the command line, from stdin (`-`) or from `--file`:
 * a shell argument cannot carry 200 000 characters, a pipe or a file can.
 */
export function messageText(words: string[], file: string | undefined, what: string, stdin: () => string = readStdin): string {
  if (file !== undefined && words.length) throw new TetherError(`give the ${what} as arguments or with --file, not both`, 'invalid');
  if (file !== undefined) {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new TetherError(`cannot read --file ${file}: ${(err as Error).message}`, 'invalid');
    }
  }
  if (words.length === 1 && words[0] === '-') return stdin();
  if (!words.length)
    throw new TetherError(`${/^[aeiou]/.test(what) ? 'an' : 'a'} ${what} is required: as arguments, "-" to read stdin, or --file <path>`, 'invalid');
  return words.join(' ');
}

function readStdin(): string {
  return readFileSync(0, 'utf8');
}
