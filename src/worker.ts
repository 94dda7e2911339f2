import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities, type ActivityDeps } from './activities/index.js';
import { BreakerRegistry } from './llm/circuit-breaker.js';
import { TranscriptCache } from './llm/transcript-cache.js';
import { loadPriceOverrides, PriceTable } from './llm/pricing.js';
import { createLogger, temporalLogger } from './ops/logger.js';
import { createTetherMetrics } from './ops/metrics.js';
import { metricsSinks } from './ops/sinks.js';
import { dataConverterFromEnv } from './ops/codec.js';
import { tracingFromEnv } from './ops/tracing.js';
import { startScriptedServer, type ScriptedServer } from './scripted/server.js';
import { tetherHome } from './server/temporal-cli.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));

/** How to reach Temporal, from the environment variables of DESIGN.md. */
export function temporalSettings(env: NodeJS.ProcessEnv = process.env) {
  return {
    address: env.TEMPORAL_ADDRESS || 'localhost:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.TETHER_TASK_QUEUE || 'tether',
  };
}

export interface TetherWorkerOptions {
  address?: string;
  namespace?: string;
  taskQueue?: string;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** A prebuilt workflow bundle (tests, benchmarks); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  workspaceRoot?: string;
  scriptedUrl?: string;
  shutdownGraceMs?: number;
  /** Overrides of ActivityDeps, for tests. */
  deps?: Partial<ActivityDeps>;
  connection?: NativeConnection;
  /** Port for the SDK's own Prometheus exporter (temporal_* series); none when absent. */
  temporalMetricsPort?: number;
  /** Workspaces on shared storage: any worker may run any run's tools (default: $TETHER_SHARED_WORKSPACES). */
  sharedWorkspaces?: boolean;
  /** Workflow cache size (0 replays every task from its history, as after a restart). */
  maxCachedWorkflows?: number;
}

let runtimeInstalled = false;

/**
 * Installs the SDK runtime once per process, so Temporal's own logs go
 * through our logger and its metrics to a Prometheus port of our choosing.
 */
export function installRuntime(logger: Logger, temporalMetricsPort?: number): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({
    logger: temporalLogger(logger),
    ...(temporalMetricsPort ? { telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${temporalMetricsPort}` } } } } : {}),
  });
}

/** Builds a worker for Tether's workflows and activities. Wiring only. */
export async function createTetherWorker(opts: TetherWorkerOptions = {}) {
  const env = opts.env ?? process.env;
  const settings = temporalSettings(env);
  const logger = opts.logger ?? createLogger({ name: 'tether-worker', env });
  installRuntime(logger, opts.temporalMetricsPort);
  const connection = opts.connection ?? (await NativeConnection.connect({ address: opts.address ?? settings.address }));
  let scripted: Promise<ScriptedServer> | undefined;
  const fixedScriptedUrl = opts.scriptedUrl || env.TETHER_SCRIPTED_URL;
  // Started on first use so a worker that never sees a scripted model never opens a port.
  const scriptedUrl = async (): Promise<string> => fixedScriptedUrl || (await (scripted ??= startScriptedServer({ port: 0 }))).url;
  const breakers = new BreakerRegistry();
  const metrics = createTetherMetrics(undefined, breakers);
  const deps: ActivityDeps = {
    env,
    workspaceRoot: opts.workspaceRoot ?? path.join(tetherHome(), 'workspaces'),
    scriptedUrl,
    prices: new PriceTable(env.TETHER_PRICES ? loadPriceOverrides(JSON.parse(readFileSync(env.TETHER_PRICES, 'utf8'))) : undefined),
    breakers,
    transcripts: new TranscriptCache(),
    logger,
    metrics: metrics.activities,
    hostname: os.hostname(),
    temporal: { address: opts.address ?? settings.address, namespace: opts.namespace ?? settings.namespace },
    ...opts.deps,
  };
  const taskQueue = opts.taskQueue ?? settings.taskQueue;
  const namespace = opts.namespace ?? settings.namespace;
  // Unless workspaces live on shared storage, a run's tools must keep running
  // where its workspace is: this worker also polls a queue of its own.
  const sharedWorkspaces = opts.sharedWorkspaces ?? Boolean(env.TETHER_SHARED_WORKSPACES);
  const workspaceQueue = sharedWorkspaces ? null : `${taskQueue}@${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  deps.workspaceQueue = workspaceQueue;
  const activities = createActivities(deps);
  const { runTool, runVerification, ...runActivities } = activities;
  const tracing = tracingFromEnv('tether-worker', env);
  if (tracing && opts.workflowBundle) logger.warn('tracing is on but the workflow bundle was built without its interceptors: workflow and step spans are missing');
  const common = {
    connection,
    ...(tracing ? { plugins: [tracing.plugin] } : {}),
    namespace,
    dataConverter: dataConverterFromEnv(env),
    // Cancellation reaches an activity only through a heartbeat reply: flushing
    // heartbeats twice a second bounds kill latency regardless of heartbeat timeouts.
    maxHeartbeatThrottleInterval: '500ms',
    shutdownGraceTime: opts.shutdownGraceMs ?? 30_000,
  } satisfies Partial<WorkerOptions>;
  const main = await Worker.create({
    ...common,
    taskQueue,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: workspaceQueue ? runActivities : activities,
    sinks: metricsSinks(metrics.sinks),
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
  });
  // A bound run's model calls come here too: this worker's transcript cache holds the run.
  const bound = { runTool, runVerification, callModel: activities.callModel, summarizeTranscript: activities.summarizeTranscript };
  const local = workspaceQueue ? await Worker.create({ ...common, taskQueue: workspaceQueue, activities: bound }) : null;
  const worker = {
    workspaceQueue,
    /** Runs until shutdown; both pollers stop together. */
    run: async () => {
      try {
        await Promise.all([main.run(), local?.run()]);
      } finally {
        // The scripted server this worker started must not keep the process alive after it.
        await (await scripted?.catch(() => undefined))?.close();
      }
    },
    shutdown: () => {
      main.shutdown();
      local?.shutdown();
    },
    getState: () => (local && local.getState() !== 'RUNNING' ? local.getState() : main.getState()),
  };
  return { worker, connection, deps, logger, metrics, tracing };
}

/** A running Tether worker: the shared queue and, unless workspaces are shared, its own queue. */
export type TetherWorker = Awaited<ReturnType<typeof createTetherWorker>>['worker'];
