import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BundleOptions, makeTelemetryFilterString, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from 'pino';
import { type Activities, createActivities, type ActivityDeps } from './activities/index.js';
import { STICKY_QUEUE_TIMEOUT_MS, temporalSettings } from './api/settings.js';
import { BreakerRegistry } from './llm/circuit-breaker.js';
import { TranscriptCache } from './llm/transcript-cache.js';
import { loadPriceOverrides, PriceTable } from './llm/pricing.js';
import { createLogger, temporalLogger } from './ops/logger.js';
import { createTetherMetrics } from './ops/metrics.js';
import { workflowSinks } from './ops/sinks.js';
import { dataConverterFromEnv } from './ops/codec.js';
import { type Tracing, tracingFromEnv } from './ops/tracing.js';
import { redactActivities } from './ops/redact-activities.js';
import { createRedactor, type Redactor, secretValues } from './api/secrets.js';
import { recordSecretFingerprints } from './api/secret-fingerprints.js';
import { startScriptedServer, type ScriptedServer } from './scripted/server.js';
import { registerSearchAttributes } from './server/search-attributes.js';
import { tetherHome } from './api/home.js';
import type { TokenStream } from './activities/deps.js';
import { TokenRelays } from './llm/token-relay.js';
import { startTokenServer } from './ops/token-server.js';
import { secretBearingEnv } from './ops/secret-env.js';
import type { Listening } from './ops/listen.js';
import { type WorkerTuning, workerTuningFromEnv, workflowStackTracesFromEnv } from './worker-tuning.js';

const moduleExtension = path.extname(fileURLToPath(import.meta.url));
/** The workflows' entry beside this file: the sources (.ts) when run through tsx, the compiled files (.js) when run from dist/. */
export const WORKFLOWS_PATH = fileURLToPath(new URL(`./workflows/index${moduleExtension}`, import.meta.url));
const preloaded = (name: string) => fileURLToPath(new URL(`./workflows/${name}${moduleExtension}`, import.meta.url));

/** Every bundle's workflow interceptors: OpenTelemetry's, whether the worker exports traces or not (src/workflows/tracing-interceptors.ts). */
const WORKFLOW_INTERCEPTOR_MODULES = [preloaded('tracing-interceptors')];

/**
 * How a workflow bundle is built, by the worker and by the tests and benchmarks that prebuild one:
 * the shared libraries are evaluated once per worker thread rather than once per run (src/workflows/shared-libraries.ts),
 * without `stackTraces` the workflows record none (src/workflows/without-stack-traces.ts), and with `traces` the
 * runs recorded before every bundle had the tracing interceptors take them (src/workflows/traced-worker.ts).
 */
export function workflowBundleOptions({ stackTraces, traces = false }: { stackTraces: boolean; traces?: boolean }) {
  return {
    workflowsPath: WORKFLOWS_PATH,
    preloadModules: [
      preloaded('shared-libraries'),
      ...(stackTraces ? [] : [preloaded('without-stack-traces')]),
      ...(traces ? [preloaded('traced-worker')] : []),
    ],
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    ...(traces ? {} : { webpackConfigHook: withoutSpanMachinery }),
  };
}

/** The bundle of a worker that exports no traces: the interceptors' span machinery is a stand-in (src/workflows/unexported-spans.ts). */
function withoutSpanMachinery(config: WebpackConfiguration): WebpackConfiguration {
  const stub = preloaded('unexported-spans');
  const alias = { '@opentelemetry/sdk-trace-base$': stub, '@opentelemetry/core$': stub };
  const existing = config.resolve?.alias;
  if (Array.isArray(existing)) throw new Error('the workflow bundler lists its module aliases as an array: src/worker.ts must merge into one');
  return { ...config, resolve: { ...config.resolve, alias: { ...existing, ...alias } } };
}

type WebpackConfiguration = Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0];

/** The default bundle: with stack traces, for a worker that exports no traces. */
export const WORKFLOW_BUNDLE_OPTIONS = workflowBundleOptions({ stackTraces: true });

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
  /** The SDK's worker limits (cache, slots, pollers, threads); default: the TETHER_WORKER_* variables (src/worker-tuning.ts). */
  tuning?: Partial<WorkerTuning>;
  /** Whether workflows record stack traces when the worker bundles them; default: $TETHER_WORKER_STACK_TRACES, on. */
  stackTraces?: boolean;
  /**
   * Signals on which the SDK drains every worker by itself (its default: SIGINT, SIGTERM, SIGQUIT, SIGUSR2).
   * `[]` when the process owns its signals (the CLI), so one stop sequence runs, in its order.
   */
  shutdownSignals?: NodeJS.Signals[];
}

let runtimeInstalled = false;

/**
 * Installs the SDK runtime once per process, so Temporal's own logs go
 * through our logger and its metrics to a Prometheus port of our choosing.
 */
export function installRuntime(logger: Logger, temporalMetricsPort?: number, shutdownSignals?: NodeJS.Signals[]): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({
    logger: temporalLogger(logger),
    ...(shutdownSignals ? { shutdownSignals } : {}),
    telemetryOptions: {
      // The SDK core's own warnings (a poll the server did not answer, …) as our JSON lines, redacted; by default the
      // core prints them to the console in its own coloured format, around ours.
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) },
      ...(temporalMetricsPort ? { metrics: { prometheus: { bindAddress: `127.0.0.1:${temporalMetricsPort}` } } } : {}),
    },
  });
}

/**
 * Builds a worker for Tether's workflows and activities. Wiring only. Close
 * the returned connection once the worker has stopped: the SDK runtime, which
 * forwards the core's logs, holds the process open until its last connection closes.
 */
export async function createTetherWorker(opts: TetherWorkerOptions = {}) {
  const env = opts.env ?? process.env;
  const settings = temporalSettings(env);
  const logger = opts.logger ?? createLogger({ name: 'tether-worker', env });
  const scripted = lazyScriptedServer(opts.scriptedUrl || env.TETHER_SCRIPTED_URL);
  const secrets = secretValues(secretBearingEnv(env));
  const redactor = createRedactor(secrets);
  // Callers on this machine without the keys (another shell's CLI, the panel) refuse a spec that holds one by these.
  await recordSecretFingerprints(tetherHome(env), secrets).catch((err: unknown) =>
    logger.warn({ err: (err as Error).message }, "could not record the secrets' fingerprints: callers without the keys cannot refuse a spec that holds one"),
  );
  const tokens = lazyTokenServer(env, logger, redactor);
  const breakers = new BreakerRegistry();
  const metrics = createTetherMetrics(undefined, breakers);
  const taskQueue = opts.taskQueue ?? settings.taskQueue;
  const namespace = opts.namespace ?? settings.namespace;
  // Unless workspaces live on shared storage, a run's tools must keep running
  // where its workspace is: this worker also polls a queue of its own.
  const sharedWorkspaces = opts.sharedWorkspaces ?? Boolean(env.TETHER_SHARED_WORKSPACES);
  const workspaceQueue = sharedWorkspaces ? null : `${taskQueue}@${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const dataConverter = dataConverterFromEnv(env, 'worker', refusalLogger(logger));
  const deps = activityDepsFrom(opts, {
    env,
    scriptedUrl: scripted.url,
    breakers,
    logger,
    metrics: metrics.activities,
    temporal: { address: opts.address ?? settings.address, namespace, dataConverter },
    tokenStreams: tokens.open,
    workspaceQueue,
  });
  const { tracing, stackTraces } = tracingAndStackTraces(opts, env, logger);
  const tuning = opts.tuning ?? workerTuningFromEnv(env);
  // The runtime and the connection come once the settings are read: a bad one fails before either holds the process open.
  installRuntime(logger, opts.temporalMetricsPort, opts.shutdownSignals);
  const connection = opts.connection ?? (await NativeConnection.connect({ address: opts.address ?? settings.address }));
  await registerOwnSearchAttributes(connection, namespace, logger);
  const common = workerCommonOptions(connection, tracing, { namespace, dataConverter, shutdownGraceMs: opts.shutdownGraceMs });
  const pollers = await createPollers(
    { ...opts, tuning, stackTraces },
    {
      common,
      taskQueue,
      workspaceQueue,
      activities: redactActivities(createActivities(deps), redactor),
      sinks: workflowSinks(metrics.sinks, tracing?.worker.sinks),
      traces: tracing !== null,
    },
  ).catch(async (err: unknown) => {
    if (!opts.connection) await connection.close().catch(() => undefined);
    throw err;
  });
  const worker = { workspaceQueue, ...pollers, run: () => pollers.run().finally(() => Promise.all([scripted.close(), tokens.close()])) };
  return { worker, connection, deps, logger, metrics, tracing };
}

/** The activities' dependencies: this worker's parts, with the options' overrides (tests) over them; its own queue is always its own. */
function activityDepsFrom(
  opts: TetherWorkerOptions,
  parts: Pick<ActivityDeps, 'env' | 'scriptedUrl' | 'breakers' | 'logger' | 'metrics' | 'temporal' | 'tokenStreams' | 'workspaceQueue'>,
): ActivityDeps {
  const { env, workspaceQueue } = parts;
  return {
    env,
    workspaceRoot: opts.workspaceRoot ?? path.join(tetherHome(), 'workspaces'),
    scriptedUrl: parts.scriptedUrl,
    prices: new PriceTable(env.TETHER_PRICES ? loadPriceOverrides(JSON.parse(readFileSync(env.TETHER_PRICES, 'utf8'))) : undefined),
    breakers: parts.breakers,
    transcripts: new TranscriptCache(),
    logger: parts.logger,
    metrics: parts.metrics,
    temporal: parts.temporal,
    tokenStreams: parts.tokenStreams,
    ...opts.deps,
    workspaceQueue,
  };
}

/**
 * Whether this worker exports traces, and whether its workflows record stack traces. A prebuilt bundle was built
 * before either was read: where it may lack what they ask for, the log says how to build it.
 */
function tracingAndStackTraces(opts: TetherWorkerOptions, env: NodeJS.ProcessEnv, logger: Logger): { tracing: Tracing | null; stackTraces: boolean } {
  const tracing = tracingFromEnv('tether-worker', env);
  if (tracing && opts.workflowBundle)
    logger.warn('tracing is on but this worker was given a prebuilt workflow bundle: build it with workflowBundleOptions({ traces: true })');
  const stackTraces = opts.stackTraces ?? workflowStackTracesFromEnv(env);
  if (!stackTraces && opts.workflowBundle)
    logger.warn('stack traces are off but this worker was given a prebuilt workflow bundle: build it with workflowBundleOptions({ stackTraces: false })');
  return { tracing, stackTraces };
}

/** The options both of the worker's pollers share. */
function workerCommonOptions(
  connection: NativeConnection,
  tracing: Tracing | null,
  { namespace, dataConverter, shutdownGraceMs }: { namespace: string; dataConverter: WorkerOptions['dataConverter']; shutdownGraceMs?: number },
) {
  return {
    connection,
    interceptors: tracing?.worker.interceptors ?? {},
    namespace,
    dataConverter,
    // Cancellation reaches an activity only through a heartbeat reply: flushing
    // heartbeats ten times a second (tools report progress as often) keeps a kill
    // under a quarter second regardless of heartbeat timeouts. docs/operations.md
    // has the server's cost, measured by `npm run bench`.
    maxHeartbeatThrottleInterval: '100ms',
    shutdownGraceTime: shutdownGraceMs ?? 30_000,
  } satisfies Partial<WorkerOptions>;
}

/** The scripted model server, started on first use so a worker that never sees a scripted model never opens a port. */
function lazyScriptedServer(fixedUrl: string | undefined) {
  let scripted: Promise<ScriptedServer> | undefined;
  return {
    async url(): Promise<string> {
      if (fixedUrl) return fixedUrl;
      scripted ??= startScriptedServer({ port: 0 });
      return (await scripted).url;
    },
    /** The server this worker started must not keep the process alive after it. */
    async close(): Promise<void> {
      await (await scripted?.catch(() => undefined))?.close();
    },
  };
}

/**
 * The live-token endpoint (src/ops/token-server.ts), started on the first
 * model call: loopback and any free port unless TETHER_TOKEN_HOST and
 * TETHER_TOKEN_PORT say otherwise (TETHER_TOKEN_PORT=off: no live tokens).
 * The address followers get is the host it is bound to, or the machine's
 * name when bound to every interface.
 */
function lazyTokenServer(env: NodeJS.ProcessEnv, logger: Logger, redactor: Redactor) {
  const relays = new TokenRelays();
  const off = env.TETHER_TOKEN_PORT === 'off';
  let server: Promise<Listening> | undefined;
  return {
    open: off
      ? undefined
      : async (): Promise<TokenStream> => {
          const host = env.TETHER_TOKEN_HOST || '127.0.0.1';
          server ??= startTokenServer({ relays, host, port: Number(env.TETHER_TOKEN_PORT || 0), logger });
          const { port } = await server;
          // Bound to every interface (a container), followers elsewhere reach it by this machine's name.
          const url = `http://${host === '0.0.0.0' || host === '::' ? os.hostname() : host.includes(':') ? `[${host}]` : host}:${port}`;
          const { capability, relay, close } = relays.open();
          // Tokens are redacted as the activity's result is: a secret never leaves the worker this way either.
          const redacting = redactor.stream();
          return {
            url: `${url}/tokens/${capability}`,
            push: (text) => relay.push(redacting.push(text)),
            close: (ok) => {
              relay.push(redacting.flush());
              close(ok);
            },
          };
        },
    async close(): Promise<void> {
      await (await server?.catch(() => undefined))?.close();
    },
  };
}

interface PollerParts {
  common: Omit<WorkerOptions, 'taskQueue'>;
  taskQueue: string;
  workspaceQueue: string | null;
  activities: Activities;
  sinks: WorkerOptions['sinks'];
  /** Whether this worker exports traces. */
  traces: boolean;
}

/** The options of a worker that bundles its workflows at start as `bundleWorkflowCode(options)` would, its other interceptors kept. */
function bundledAtStart(
  { workflowsPath, workflowInterceptorModules, ...bundlerOptions }: ReturnType<typeof workflowBundleOptions>,
  interceptors: WorkerOptions['interceptors'],
) {
  return { workflowsPath, bundlerOptions, interceptors: { ...interceptors, workflowModules: workflowInterceptorModules } };
}

/**
 * The worker's pollers: the shared queue runs workflows and the activities
 * any worker may run, model calls included; the worker's own queue (unless
 * workspaces are shared) runs the workspace-bound ones, and the model calls
 * that runs of an earlier version scheduled there.
 */
async function createPollers(opts: TetherWorkerOptions, { common, taskQueue, workspaceQueue, activities, sinks, traces }: PollerParts) {
  const { runTool, runVerification, restoreCheckpoint, checkpointBeforeCall, checkpointAfterCall, ...anywhere } = activities;
  const main = await Worker.create({
    ...common,
    taskQueue,
    ...(opts.workflowBundle
      ? { workflowBundle: opts.workflowBundle }
      : bundledAtStart(workflowBundleOptions({ stackTraces: opts.stackTraces ?? true, traces }), common.interceptors)),
    activities: workspaceQueue ? anywhere : activities,
    sinks,
    stickyQueueScheduleToStartTimeout: STICKY_QUEUE_TIMEOUT_MS,
    ...opts.tuning,
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
  });
  const bound = {
    runTool,
    runVerification,
    restoreCheckpoint,
    checkpointBeforeCall,
    checkpointAfterCall,
    claimWorkspace: activities.claimWorkspace,
    callModel: activities.callModel,
    summarizeTranscript: activities.summarizeTranscript,
  };
  // The worker's own queue carries only activities: the activity limits apply to it too.
  const activityLimits = Object.fromEntries(
    Object.entries(opts.tuning ?? {}).filter(([option]) => option === 'maxConcurrentActivityTaskExecutions' || option === 'maxConcurrentActivityTaskPolls'),
  );
  const local = workspaceQueue ? await Worker.create({ ...common, ...activityLimits, taskQueue: workspaceQueue, activities: bound }) : null;
  return {
    /** Runs until shutdown; both pollers stop together. */
    run: async (): Promise<void> => {
      await Promise.all([main.run(), local?.run()]);
    },
    /** Stops polling; idempotent, since the SDK's own signal handler may have begun the drain already. */
    shutdown: () => {
      for (const poller of [main, local]) if (poller?.getState() === 'RUNNING') poller.shutdown();
    },
    getState: () => (local && local.getState() !== 'RUNNING' ? local.getState() : main.getState()),
  };
}

/** A running Tether worker: the shared queue and, unless workspaces are shared, its own queue. */
export type TetherWorker = Awaited<ReturnType<typeof createTetherWorker>>['worker'];

const REFUSAL_LOG_EVERY_MS = 60_000;

/**
 * Says in the log why a run reads nothing: a payload this worker's codec
 * refused (sealed with a key it lacks, altered, or plaintext). Once a minute
 * for each reason: a run replayed with such payloads refuses them at every try.
 */
function refusalLogger(logger: Logger): (reason: string) => void {
  const lastSaid = new Map<string, number>();
  return (reason) => {
    const now = Date.now();
    if (now - (lastSaid.get(reason) ?? 0) < REFUSAL_LOG_EVERY_MS) return;
    if (lastSaid.size > 100) lastSaid.clear();
    lastSaid.set(reason, now);
    logger.warn({ reason }, "a payload could not be opened with this worker's encryption keys: the run reads it as refused");
  };
}

/**
 * Registers the search attributes a namespace lacks (a server Tether did not
 * start), which every run sets and upserts. A worker may lack the right to
 * (a cluster whose operators register them): it says so and polls anyway.
 */
async function registerOwnSearchAttributes(connection: NativeConnection, namespace: string, logger: Logger): Promise<void> {
  try {
    const added = await registerSearchAttributes(connection.operatorService, namespace);
    if (added.length) logger.info({ namespace, added }, `registered Tether's search attributes ${added.join(', ')}`);
  } catch (err) {
    logger.warn(
      { namespace, err: (err as Error).message },
      "could not check or register Tether's search attributes; `tether doctor` says what is missing and how to register it",
    );
  }
}
