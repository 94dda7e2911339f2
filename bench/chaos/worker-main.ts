// A Tether worker in a process of its own, so the chaos suite can SIGKILL it
// like a real crash. It loads a prebuilt workflow bundle (CHAOS_BUNDLE) so a
// restart costs seconds, not a re-bundle, and serves its metrics (Tether's
// and the SDK's temporal_* series) on CHAOS_METRICS_PORT.
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../src/server/free-port.js';
import { startMetricsServer } from '../../src/ops/metrics-server.js';
import { withProcessMetrics } from '../../src/ops/metrics.js';
import { createTetherWorker } from '../../src/worker.js';

const env = process.env;
// A standby replacement: loaded, but it polls only once CHAOS_STANDBY_FILE exists (after the kill it stands in for).
if (env.CHAOS_STANDBY_FILE) while (!existsSync(env.CHAOS_STANDBY_FILE)) await sleep(50);
const temporalMetricsPort = await freePort();
const { worker, metrics, tracing } = await createTetherWorker({
  workflowBundle: env.CHAOS_BUNDLE ? { codePath: env.CHAOS_BUNDLE } : undefined,
  workspaceRoot: env.CHAOS_WORKSPACES,
  temporalMetricsPort,
  ...(env.CHAOS_MAX_CACHED ? { maxCachedWorkflows: Number(env.CHAOS_MAX_CACHED) } : {}),
});
if (env.CHAOS_METRICS_PORT) {
  await startMetricsServer({
    port: Number(env.CHAOS_METRICS_PORT),
    registry: withProcessMetrics(metrics.registry),
    temporalMetricsUrl: `http://127.0.0.1:${temporalMetricsPort}/metrics`,
    readiness: async () => null,
  });
}
process.stdout.write('worker-ready\n');
await worker.run();
// Spans leave in batches: the last ones go before the process does.
await tracing?.flush();
process.stdout.write('worker-stopped\n');
process.exit(0);
