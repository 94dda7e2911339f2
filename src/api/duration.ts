import { z } from 'zod';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `90s`, `30m`, `1.5h`, `7d`, `250ms` or a plain number of milliseconds. */
export function parseDuration(input: string | number): number {
  if (typeof input === 'number') {
    if (!Number.isFinite(input) || input < 0) throw new Error(`invalid duration ${input}: expected a non-negative number of milliseconds`);
    return Math.round(input);
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(input);
  if (!match) throw new Error(`invalid duration "${input}": use e.g. 90s, 30m, 2h, 7d or milliseconds`);
  return Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 'ms']);
}

/** Formats milliseconds as the shortest exact unit (`90s`, `30m`), for messages and tables. */
export function formatDuration(ms: number): string {
  if (ms < 0) return `-${formatDuration(-ms)}`;
  if (ms >= 86_400_000 && ms % 86_400_000 === 0) return `${ms / 86_400_000}d`;
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms >= 1_000) return `${Math.round(ms / 100) / 10}s`;
  return `${ms}ms`;
}

/** A zod duration field: accepts the strings above or milliseconds and yields milliseconds within bounds. */
export function duration(opts: { min?: number; max: number }) {
  const min = opts.min ?? 1;
  return z
    .union([z.number(), z.string()])
    .transform((value, ctx) => {
      try {
        return parseDuration(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    })
    .refine((ms) => ms >= min && ms <= opts.max, {
      message: `must be between ${formatDuration(min)} and ${formatDuration(opts.max)}`,
    });
}
