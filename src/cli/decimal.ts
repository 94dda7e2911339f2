/** Decimal notation only: an optional sign, digits, an optional fraction. */
const DECIMAL = /^\s*[-+]?(\d+(\.\d*)?|\.\d+)\s*$/;

/**
 * A flag's number as a person writes it, or NaN. `Number()` alone also takes
 * `0x10`, `0b11`, `0o7`, `1e2` and an empty string (as 0), so `--max-steps
 * 0x10` meant 16 and `--port ""` meant any free port.
 */
export function decimal(value: string | undefined): number {
  return value !== undefined && DECIMAL.test(value) ? Number(value) : Number.NaN;
}
