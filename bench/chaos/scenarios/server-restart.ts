/**
 * Server SIGKILL and restart: a dev server of the scenario's own is killed
 * without warning and started again on the same SQLite file, several times,
 * while runs are in flight. Every run must resume and complete.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { connectTether, startRun, type TetherClient } from '../../../src/client/runs.js';
import type { Script } from '../../../src/scripted/script.js';
import { startDevServer } from '../../../src/server/dev-server.js';
import { freePort } from '../../../src/server/free-port.js';
import { inBatches, type Scenario } from '../context.js';
import { resultWithin, scriptedServer } from '../stack.js';
import { completed, countTaskFailures, describe } from './fault-storm.js';

const STEPS = 12;
const script: Script = {
  steps: [
    { reply: { toolCalls: [{ name: 'write_file', args: { path: 'r{{step}}.txt', content: '{{step}}' } }] }, repeat: STEPS, delayMs: 300 },
    { reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 2; echo slept > slept.txt' } }] } },
  ],
  after: { toolCalls: [{ name: 'finish', args: { summary: 'outlived the server' } }] },
} as Script;

export const serverRestart: Scenario = async (ctx) => {
  const restarts = ctx.quick ? 2 : 5;
  const runs = ctx.quick ? 4 : 20;
  const dir = await ctx.stack.tempDir('restart');
  const db = path.join(dir, 'temporal.db');
  const port = await freePort();
  let server = await startDevServer({ port, db, headless: true, stdio: 'ignore' });
  const scripted = await scriptedServer({ restart: script });
  const taskQueue = `chaos-restart-${Date.now()}`;
  const worker = await ctx.stack.startWorker({ TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url, TEMPORAL_ADDRESS: server.address });
  let tc: TetherClient = await connectTether({ address: server.address, taskQueue });
  const problems: string[] = [];
  try {
    const ids = await inBatches(Array.from({ length: runs }), 10, async (_, i) => {
      const spec = { goal: 'restart', model: 'scripted:restart', critic: { policy: 'off' as const }, limits: { maxRuntime: '30m' } };
      return (await startRun(tc, spec, { id: `restart-${Date.now()}-${i}` })).runId;
    });
    for (let i = 0; i < restarts; i++) {
      await sleep(2_000 + ctx.random() * 2_000);
      await tc.close();
      process.kill(server.pid, 'SIGKILL');
      await server.exited;
      await sleep(500);
      server = await startDevServer({ port, db, headless: true, stdio: 'ignore' });
      tc = await connectTether({ address: server.address, taskQueue });
      ctx.log(`server restart ${i + 1}/${restarts}`);
    }
    const results = await inBatches(ids, 20, (id) => resultWithin(tc, id, ctx.quick ? 180_000 : 600_000));
    let lost = 0;
    results.forEach((r, i) => {
      if (!completed(r, 'outlived the server') || r.steps !== STEPS + 2) {
        lost++;
        problems.push(`run ${ids[i]} ended ${describe(r)}${'steps' in r ? ` after ${r.steps} steps` : ''}`);
      }
    });
    const taskFailures = await countTaskFailures(tc, ids);
    problems.push(...taskFailures);
    return {
      name: 'server SIGKILL + restart',
      faults: restarts,
      runs,
      lost: lost + taskFailures.length,
      figures: { restarts, completed: results.filter((r) => completed(r)).length },
      problems,
    };
  } finally {
    await tc.close();
    await worker.kill('SIGTERM');
    await scripted.close();
    await server.stop();
  }
};
