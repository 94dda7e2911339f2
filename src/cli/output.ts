import { TetherError } from '../client/runs.js';

export type OutputFormat = 'text' | 'json' | 'stream-json';

/** Exit codes of the machine surface (DESIGN.md). */
export const EXIT = { ok: 0, failed: 1, usage: 2, blocked: 10, cancelled: 11, continued: 12 } as const;

export function parseFormat(value: string, allowStream = false): OutputFormat {
  const allowed = allowStream ? ['text', 'json', 'stream-json'] : ['text', 'json'];
  if (!allowed.includes(value)) throw new TetherError(`invalid --output "${value}": use ${allowed.join(', ')}`, 'invalid');
  return value as OutputFormat;
}

/** Writes the command's one JSON object as the last line of stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Human progress and diagnostics go to stderr so stdout stays machine-readable. */
export function note(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** Prints rows as an aligned table. */
export function printTable(rows: Array<Record<string, string>>, columns: string[]): void {
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd();
  process.stdout.write(`${line(columns.map((c) => c.toUpperCase()))}\n`);
  for (const row of rows) process.stdout.write(`${line(columns.map((c) => row[c] ?? ''))}\n`);
}

/** Prints key/value pairs aligned, for one object. */
export function printFields(fields: Array<[string, string]>): void {
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [key, value] of fields) process.stdout.write(`${`${key}:`.padEnd(width + 2)}${value}\n`);
}

/** Reports a failure in the chosen format and returns the exit code. */
export function reportError(err: unknown, format: OutputFormat): number {
  const message = (err as Error)?.message ?? String(err);
  const code = err instanceof TetherError ? err.code : 'error';
  if (format === 'text') note(`error: ${message}`);
  else printJson({ error: { code, message } });
  return err instanceof TetherError && err.code === 'invalid' ? EXIT.usage : EXIT.failed;
}

/**
 * Wraps a long-running command (server, worker, panel …): it reads `--output`,
 * and a failure is reported in that format with exit 1 (2 for a usage error).
 */
export function serviceAction<O extends { output: string }>(action: (opts: O, format: OutputFormat) => Promise<void>): (opts: O) => Promise<void> {
  return async (opts: O) => {
    let format: OutputFormat = 'text';
    try {
      format = parseFormat(opts.output);
      await action(opts, format);
    } catch (err) {
      process.exitCode = reportError(err, format);
    }
  };
}

/** A service is up: a line for people on stderr, or one JSON object on stdout. */
export function announce(format: OutputFormat, text: string, value: Record<string, unknown>): void {
  if (format === 'json') printJson(value);
  else note(text);
}

export function age(iso: string | null | undefined): string {
  if (!iso) return '';
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

export function usd(value: number | null | undefined): string {
  return value === null || value === undefined ? '-' : `$${value.toFixed(4)}`;
}
