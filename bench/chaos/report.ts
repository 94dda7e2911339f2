/** What one scenario reports, and how the suite prints it. */

export interface ScenarioReport {
  name: string;
  /** Faults injected: failed model attempts, kills, restarts, bad inputs sent. */
  faults: number;
  /** Runs started. */
  runs: number;
  /** Runs that did not reach the end they should have (or a broken invariant: an escape, a leak, a failed workflow task). */
  lost: number;
  /** The scenario's own figures. */
  figures: Record<string, number | string>;
  /** One line per thing that went wrong, precise enough to reproduce. */
  problems: string[];
  /** What happened, for the record (not a problem). */
  notes?: string[];
  seconds: number;
}

export function table(reports: ScenarioReport[]): string {
  const rows = reports.map((r) => [r.name, String(r.faults), String(r.runs), String(r.lost), `${r.seconds.toFixed(0)} s`, headline(r.figures)]);
  const head = ['scenario', 'faults', 'runs', 'lost', 'time', 'figures'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

function headline(figures: Record<string, number | string>): string {
  return Object.entries(figures)
    .map(([k, v]) => `${k} ${typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(1) : v}`)
    .join(', ');
}

export function summaryLine(reports: ScenarioReport[]): string {
  const sum = (f: (r: ScenarioReport) => number) => reports.reduce((n, r) => n + f(r), 0);
  return `chaos: ${reports.length} scenarios, ${sum((r) => r.faults)} faults injected, ${sum((r) => r.runs)} runs, ${sum((r) => r.lost)} lost`;
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
