const BARS = '▁▂▃▄▅▆▇█';

/**
 * Values as a one-line sparkline (▁ lowest … █ highest), scaled to the
 * largest value so a run's expensive steps stand out. The last `width`
 * values only: a long run's recent steps matter most on a status line.
 */
export function sparkline(values: number[], width = 60): string {
  const shown = values.slice(-width);
  const max = Math.max(0, ...shown);
  return shown.map((v) => (max > 0 ? BARS[Math.min(BARS.length - 1, Math.floor((Math.max(0, v) / max) * (BARS.length - 1) + 0.5))] : BARS[0])).join('');
}
