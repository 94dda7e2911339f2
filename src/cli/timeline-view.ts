import type { Span, Timeline } from '../history/timeline.js';
import { duration, printTable, usd } from './output.js';
import { oneLine } from './status-format.js';

const WIDTH = 40;

/**
 * A span's bar on a line of WIDTH cells spanning the whole run: spaces
 * before it, then █ for work and ░ for waiting; a span too short for a cell
 * still gets one, so nothing disappears.
 */
export function bar(span: Span, from: number, to: number, width = WIDTH): string {
  const total = Math.max(1, to - from);
  const start = Date.parse(span.startedAt);
  const end = span.endedAt ? Date.parse(span.endedAt) : to;
  const first = Math.min(width - 1, Math.floor(((start - from) / total) * width));
  const cells = Math.max(1, Math.round(((end - start) / total) * width));
  const fill = (span.kind === 'pause' ? '░' : '█').repeat(Math.min(cells, width - first));
  return `${' '.repeat(first)}${fill}`.padEnd(width);
}

function details(span: Span): string {
  const parts = [span.name];
  if (span.costUsd !== undefined) parts.push(usd(span.costUsd));
  if (span.attempts > 1) parts.push(`${span.attempts} attempts`);
  if (span.error) parts.push(`error: ${oneLine(span.error, 60)}`);
  if (span.outcome !== 'completed' && span.outcome !== 'resumed') parts.push(span.outcome);
  return parts.join(' · ');
}

/** The run as a waterfall in the terminal: one row per span, a row where it continued as new. */
export function printTimeline(t: Timeline, nowMs = Date.now()): void {
  const starts = [...t.spans.map((s) => Date.parse(s.startedAt)), ...t.executions.map((x) => Date.parse(x.startedAt))];
  const ends = t.executions.map((x) => (x.endedAt ? Date.parse(x.endedAt) : nowMs));
  const from = Math.min(...starts);
  const to = Math.max(from + 1, ...ends, ...t.spans.map((s) => (s.endedAt ? Date.parse(s.endedAt) : nowMs)));
  const rows: Array<{ at: string; row: Record<string, string> }> = t.spans.map((s) => ({
    at: s.startedAt,
    row: {
      step: s.step ? String(s.step) : '',
      kind: s.kind,
      took: s.endedAt ? duration(Date.parse(s.endedAt) - Date.parse(s.startedAt)) : '…',
      timeline: `|${bar(s, from, to)}|`,
      what: details(s),
    },
  }));
  for (const [i, x] of t.executions.entries())
    if (i > 0)
      rows.push({
        at: x.startedAt,
        row: { step: '', kind: '', took: '', timeline: '', what: `— continued as new: execution ${i + 1} of ${t.executions.length} —` },
      });
  rows.sort((a, b) => a.at.localeCompare(b.at));
  printTable(
    rows.map((r) => r.row),
    ['step', 'kind', 'took', 'timeline', 'what'],
  );
  process.stdout.write(`\n${duration(to - from)} from start to ${t.executions.at(-1)?.endedAt ? 'end' : 'now'}; █ work, ░ paused\n`);
}
