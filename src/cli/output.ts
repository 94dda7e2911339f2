import type { Command } from 'commander';
import { namespaceMissing, serverGone, TetherError } from '../client/errors.js';
import { EXIT } from './exit-codes.js';

export { EXIT } from './exit-codes.js';

export type OutputFormat = 'text' | 'json' | 'stream-json';

export function parseFormat(value: string, allowStream = false): OutputFormat {
  const allowed = allowStream ? ['text', 'json', 'stream-json'] : ['text', 'json'];
  if (!allowed.includes(value)) throw new TetherError(`invalid --output "${value}": use ${allowed.join(', ')}`, 'invalid');
  return value as OutputFormat;
}

/** A verb with its description and `--output text|json`; `json` says what the JSON object holds when that needs saying. */
export function verb(program: Command, name: string, description: string, json?: string): Command {
  return program
    .command(name)
    .description(description)
    .option('--output <format>', json ? `text or json (${json})` : 'text or json', 'text');
}

/** A required option that says so in `--help` (commander checks it but does not show it). */
export function required(cmd: Command, flags: string, description: string): Command {
  return cmd.requiredOption(flags, `${description} (required)`);
}

/** The options of the verbs that start a local Temporal server. */
export function localServerOptions(cmd: Command): Command {
  return cmd.option('--port <port>', 'Temporal gRPC port', '7233').option('--ui-port <port>', 'Temporal UI port', '8233');
}

/** Writes the command's one JSON object as the last line of stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Human progress and diagnostics go to stderr so stdout stays machine-readable. */
export function note(message: string): void {
  process.stderr.write(`${terminalText(message)}\n`);
}

/** How long a request about a run goes unanswered before the CLI says why it waits. */
const SLOW_ANSWER_MS = 3_000;

/**
 * `work`, a request a worker answers for run `id`; one that takes longer than a
 * few seconds is said on stderr, with the likely reason, so a wait is never silent.
 */
export async function notingSlowAnswer<T>(id: string, work: Promise<T>): Promise<T> {
  const timer = setTimeout(
    () =>
      note(
        `run ${id} has not answered in ${SLOW_ANSWER_MS / 1000} s: the worker holding it is busy, or has just died ` +
          '(Temporal then hands the run to a live worker within about 10 s); still waiting',
      ),
    SLOW_ANSWER_MS,
  );
  try {
    return await work;
  } finally {
    clearTimeout(timer);
  }
}

/** Prints rows as an aligned table. */
export function printTable(rows: Array<Record<string, string>>, columns: string[]): void {
  const cells = rows.map((row) => columns.map((c) => cellText(row[c] ?? '')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line(columns.map((c) => c.toUpperCase()))}\n`);
  for (const row of cells) process.stdout.write(`${line(row)}\n`);
}

const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Text from a run (a model's words, a tool's output, a call id a model made
 * up) as a terminal may show it: its control characters escaped, so it can
 * neither act on the terminal (clear it, hide text, set its title) nor, with a
 * carriage return, draw over what came before; and its text-direction marks
 * too, so a U+202E cannot show a line (an audit row, a command) reversed.
 * Line breaks stay when `lines`.
 */
export function terminalText(text: string, lines = true): string {
  return text.replace(/[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu, (c) =>
    lines && c === '\n' ? c : (SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
}

/** A cell's text on one line, its control characters escaped: text from a run (a name, a goal) can neither forge a row nor act on the terminal. */
function cellText(text: string): string {
  return terminalText(text, false);
}

/** Prints key/value pairs aligned, for one object. */
export function printFields(fields: Array<[string, string]>): void {
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [key, value] of fields) process.stdout.write(`${`${key}:`.padEnd(width + 2)}${terminalText(value)}\n`);
}

/** Reports a failure in the chosen format and returns the exit code: 2 for invalid input, 1 otherwise. */
export function reportError(failure: unknown, format: OutputFormat): number {
  const err = serverGone(failure) ?? namespaceMissing(failure) ?? failure;
  const message = (err as Error)?.message ?? String(err);
  const code = err instanceof TetherError ? err.code : 'error';
  if (format === 'text') note(`error: ${message}`);
  else printJson({ error: { code, message } });
  return err instanceof TetherError && err.code === 'invalid' ? EXIT.usage : EXIT.failed;
}

/**
 * Wraps a command's body: it reads `--output`, and a failure is reported in
 * that format with the exit code of the table (exit-codes.ts).
 */
export function action<O extends { output: string }>(body: (opts: O, format: OutputFormat) => Promise<void>, allowStream = false): (opts: O) => Promise<void> {
  return async (opts: O) => {
    let format: OutputFormat = 'text';
    try {
      format = parseFormat(opts.output, allowStream);
      await body(opts, format);
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

/** A duration in milliseconds for people: 850ms, 12.3s, 4m05s. */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  const s = Math.round(ms / 1_000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
