// The CLI's wall time per verb, as a person at a terminal sees it: a fresh
// `node bin/tether.js …` process each time, against a running server.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/server/free-port.js';
import { percentile } from './history-breakdown.js';

const CLI = fileURLToPath(new URL('../bin/tether.js', import.meta.url));

function timed(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const start = performance.now();
  const child = spawn(process.execPath, args, { env, stdio: 'ignore' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', () => resolve(performance.now() - start));
  });
}

/**
 * p50 and p95 wall milliseconds of `node -e 0` (the floor: Node itself),
 * `--help`, `list`, `status` and `history` of a closed run, and `list` with
 * no server listening. One at a time, so the figures are the CLI's, not the
 * machine's queue.
 */
export async function cliStart(address: string, closedRunId: string, trials: number): Promise<Record<string, number>> {
  const env = { ...process.env, TEMPORAL_ADDRESS: address };
  const nowhere = { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` };
  const cases: Array<[string, string[], NodeJS.ProcessEnv]> = [
    ['node -e 0', ['-e', '0'], env],
    ['--help', [CLI, '--help'], env],
    ['list', [CLI, 'list'], env],
    ['status (closed run)', [CLI, 'status', closedRunId, '--output', 'json'], env],
    ['history', [CLI, 'history', closedRunId], env],
    ['list, no server', [CLI, 'list'], nowhere],
  ];
  const figures: Record<string, number> = {};
  for (const [name, args, caseEnv] of cases) {
    const samples: number[] = [];
    for (let i = 0; i < trials; i++) samples.push(await timed(args, caseEnv));
    figures[`${name} p50 ms`] = percentile(samples, 50);
    figures[`${name} p95 ms`] = percentile(samples, 95);
  }
  return figures;
}
