import { spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const RUNNER = fileURLToPath(new URL('../bench/chaos/run.ts', import.meta.url));

interface ChaosReport {
  quick: boolean;
  lost: number;
  summary: string;
  scenarios: Array<{ name: string; runs: number; lost: number; problems: string[] }>;
}

/** Runs `npm run chaos -- --quick` as a real child process (its own dev server, workers and model server) and reads the JSON it writes. */
async function runQuickChaos(): Promise<{ code: number | null; output: string; report: ChaosReport }> {
  const out = path.join(await mkdtemp(path.join(os.tmpdir(), 'tether-chaos-test-')), 'chaos.json');
  const child = spawn(process.execPath, ['--import', 'tsx', RUNNER, '--quick', '--out', out], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, output, report: JSON.parse(await readFile(out, 'utf8')) as ChaosReport };
}

describe('chaos, quick', () => {
  // Seven scenarios on real processes: a generous bound, never a timing assertion.
  it('injects every kind of fault and loses nothing', { timeout: 1_800_000 }, async () => {
    const { code, output, report } = await runQuickChaos();
    const problems = report.scenarios.flatMap((s) => s.problems.map((p) => `${s.name}: ${p}`));
    expect(problems, output.slice(-4_000)).toEqual([]);
    expect(report.lost).toBe(0);
    expect(report.quick).toBe(true);
    expect(report.scenarios.map((s) => s.name)).toEqual([
      'fault storm',
      'worker SIGKILL',
      'server SIGKILL + restart',
      'fuzz',
      'load',
      'secrets',
      'workspace escapes',
    ]);
    for (const s of report.scenarios) expect(s.runs, s.name).toBeGreaterThan(0);
    expect(output).toMatch(/^chaos: 7 scenarios, \d+ faults injected, \d+ runs, 0 lost$/m);
    expect(code).toBe(0);
  });
});
