// `npm run chaos [-- --quick] [-- --only storm,kill]`: chaos, load and fuzz
// on real processes (a dev server of its own, worker children, the scripted
// model server). Prints a table, writes bench/results/chaos-<time>.json and
// ends with one summary line. Exits 1 when anything was lost.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type ChaosContext, type Scenario, seededRandom } from './context.js';
import { type ScenarioReport, summaryLine, table } from './report.js';
import { faultStorm } from './scenarios/fault-storm.js';
import { workerKill } from './scenarios/worker-kill.js';
import { serverRestart } from './scenarios/server-restart.js';
import { fuzz } from './scenarios/fuzz.js';
import { load } from './scenarios/load.js';
import { secrets } from './scenarios/secrets.js';
import { escapes } from './scenarios/escapes.js';
import { startStack } from './stack.js';

const SCENARIOS: Array<[string, Scenario]> = [
  ['storm', faultStorm],
  ['kill', workerKill],
  ['restart', serverRestart],
  ['fuzz', fuzz],
  ['load', load],
  ['secrets', secrets],
  ['escapes', escapes],
];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    seed: { type: 'string' },
    out: { type: 'string' },
  },
});
const seed = Number(values.seed ?? Date.now() % 2 ** 31);
const only = values.only?.split(',');
const log = (message: string) => process.stderr.write(`chaos: ${message}\n`);

async function main(): Promise<number> {
  const started = Date.now();
  log(`${values.quick ? 'quick' : 'full'} suite, seed ${seed}`);
  const stack = await startStack();
  log(`dev server on ${stack.server.address} (db ${stack.db}), ready after ${((Date.now() - started) / 1000).toFixed(0)} s`);
  const ctx: ChaosContext = { stack, quick: values.quick ?? false, log, random: seededRandom(seed) };
  const reports: ScenarioReport[] = [];
  try {
    for (const [key, scenario] of SCENARIOS) {
      if (only && !only.includes(key)) continue;
      log(`${key} …`);
      const t = Date.now();
      try {
        reports.push({ ...(await scenario(ctx)), seconds: (Date.now() - t) / 1000 });
      } catch (err) {
        reports.push({
          name: key,
          faults: 0,
          runs: 0,
          lost: 1,
          figures: {},
          problems: [`the scenario itself failed: ${(err as Error).stack}`],
          seconds: (Date.now() - t) / 1000,
        });
      }
      const last = reports.at(-1)!;
      log(`${key}: ${last.runs} runs, ${last.lost} lost in ${last.seconds.toFixed(0)} s`);
    }
  } finally {
    const stopping = Date.now();
    await stack.stop();
    log(`stack stopped in ${((Date.now() - stopping) / 1000).toFixed(0)} s`);
  }
  const file = values.out ?? path.join(fileURLToPath(new URL('../results/', import.meta.url)), `chaos-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await mkdir(path.dirname(file), { recursive: true });
  const summary = summaryLine(reports);
  const lost = reports.reduce((n, r) => n + r.lost, 0);
  const doc = {
    date: new Date().toISOString(),
    quick: ctx.quick,
    seed,
    node: process.version,
    cpus: os.cpus().length,
    seconds: (Date.now() - started) / 1000,
    lost,
    summary,
    scenarios: reports,
  };
  await writeFile(file, `${JSON.stringify(doc, null, 2)}\n`);
  process.stdout.write(`${table(reports)}\n\n`);
  for (const r of reports) for (const p of r.problems) process.stdout.write(`! ${r.name}: ${p}\n`);
  // A problem that lost nothing (a kill that missed its phase) still means the figures do not say what they claim.
  const failed = lost > 0 || reports.some((r) => r.problems.length);
  // The scratch directory (the dev server's database, workspaces, checkpoints: ~75 MB for a quick run) is kept only to explain a failure.
  if (!failed) await rm(stack.dir, { recursive: true, force: true });
  const kept = failed ? `; worker logs, database and workspaces kept in ${stack.dir}` : '';
  process.stdout.write(`wrote ${path.relative(process.cwd(), file)}${kept}\n${summary}\n`);
  return failed ? 1 : 0;
}

process.exitCode = await main();
