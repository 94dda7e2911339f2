import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { DEFAULT_SERVER_VERSION, DEFAULT_UI_VERSION } from '../src/cluster/binaries.js';
import { DYNAMIC_CONFIG, SERVER_CONFIG } from '../src/cluster/temporal.js';
import { SEARCH_ATTRIBUTES } from '../src/server/search-attributes.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const read = (file: string) => readFileSync(`${ROOT}${file}`, 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string | null>;
  expose?: Array<string | number>;
  ports?: Array<string | { target: number; host_ip?: string }>;
  deploy?: { replicas?: number | string };
  profiles?: string[];
  volumes?: Array<string | { source: string; target: string }>;
  networks?: Record<string, { aliases?: string[] } | null>;
  depends_on?: Record<string, { condition: string }>;
}
type Compose = { services: Record<string, Service> };

/** Compose's `${VAR:-default}` / `${VAR}` / `${VAR:?message}` interpolation, for when the docker CLI is not there to do it. */
function interpolate<T>(value: T, env: Record<string, string>): T {
  if (typeof value === 'string') {
    return value.replace(/\$\{(\w+)(?:(:?-|:\?)([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
      if (op === ':?' && !env[name]) throw new Error(`required variable ${name} is missing a value: ${arg}`);
      return env[name] || (op === ':?' ? '' : arg) || '';
    }) as T;
  }
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)])) as T;
  return value;
}

async function dockerCompose(): Promise<boolean> {
  try {
    await run('docker', ['compose', 'version'], { timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** Only what the docker CLI itself needs, so the developer's own TEMPORAL_* or TETHER_* settings cannot change the result. */
function dockerEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'DOCKER_HOST', 'DOCKER_CONFIG', 'DOCKER_CONTEXT'];
  return Object.fromEntries(keep.filter((k) => process.env[k]).map((k) => [k, process.env[k]!]));
}

/** The resolved compose model: from `docker compose config` when available, else parsed and interpolated here. */
async function loadCompose(env: Record<string, string> = {}): Promise<Compose> {
  if (await dockerCompose()) {
    const { stdout } = await run('docker', ['compose', '--profile', 'encryption', 'config', '--format', 'json'], {
      cwd: ROOT,
      env: { ...dockerEnv(), ...env },
      timeout: 30_000,
    });
    return JSON.parse(stdout) as Compose;
  }
  return interpolate(parse(read('docker-compose.yml'), { merge: true }) as Compose, env);
}

/** Ports a service listens on inside the network: `expose`, published container ports, and a `--port` flag. */
function containerPorts(service: Service): number[] {
  const command = Array.isArray(service.command) ? service.command : (service.command ?? '').split(/\s+/);
  const flag = command.indexOf('--port');
  return [
    ...(service.expose ?? []).map(Number),
    ...(service.ports ?? []).map((p) => (typeof p === 'object' ? p.target : Number(String(p).split(':').at(-1)))),
    ...(flag >= 0 ? [Number(command[flag + 1])] : []),
  ];
}

/** The panel token every `docker compose` command needs (the file requires it). */
const TOKEN = { TETHER_PANEL_TOKEN: 'a-panel-token-of-thirty-two-chars' };

/** Where a published port listens on the host (compose's long syntax or the short string). */
function hostIp(port: string | { host_ip?: string }): string {
  return typeof port === 'object' ? (port.host_ip ?? '0.0.0.0') : String(port).split(':').length === 3 ? String(port).split(':')[0] : '0.0.0.0';
}

/** A bind mount's host side, relative to the repository. */
function mounts(service: Service): Record<string, string> {
  return Object.fromEntries(
    (service.volumes ?? []).map((v) => {
      const [source, target] = typeof v === 'object' ? [v.source, v.target] : v.split(':');
      return [target, path.relative(ROOT, path.resolve(ROOT, source))];
    }),
  );
}

describe('docker-compose.yml', () => {
  let compose: Compose;
  beforeAll(async () => {
    compose = await loadCompose(TOKEN);
  });

  it('names every part of the deployment: two Temporal nodes, the UI, the workers, the panel', () => {
    for (const name of [
      'postgresql',
      'temporal-schema',
      'temporal-1',
      'temporal-2',
      'temporal-init',
      'temporal-ui',
      'worker',
      'panel',
      'codec-server',
      'prometheus',
    ]) {
      expect(compose.services, name).toHaveProperty(name);
    }
  });

  it('uses official images for everything it does not build itself, at the versions `tether cluster up` builds', () => {
    const official = /^(postgres|temporalio\/(server|admin-tools|ui)|prom\/prometheus):[\w.-]+$/;
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build) continue;
      expect(service.image, name).toMatch(official);
    }
    expect(compose.services.postgresql.image).toBe('postgres:16');
    const server = DEFAULT_SERVER_VERSION.replace(/^v/, '');
    for (const name of ['temporal-1', 'temporal-2']) expect(compose.services[name].image).toBe(`temporalio/server:${server}`);
    for (const name of ['temporal-schema', 'temporal-init']) expect(compose.services[name].image).toBe(`temporalio/admin-tools:${server}`);
    expect(compose.services['temporal-ui'].image).toBe(`temporalio/ui:${DEFAULT_UI_VERSION.replace(/^v/, '')}`);
  });

  it("runs both Temporal nodes from deploy/'s files, the ones `tether cluster up` reads", () => {
    const [first, second] = [compose.services['temporal-1'], compose.services['temporal-2']];
    expect(first.environment).toEqual(second.environment);
    expect(first.environment).toMatchObject({
      TEMPORAL_SERVER_CONFIG_FILE_PATH: '/etc/temporal/config/tether/server.yaml',
      DYNAMIC_CONFIG_FILE_PATH: '/etc/temporal/config/dynamicconfig/tether.yaml',
    });
    for (const node of [first, second]) {
      expect(mounts(node)).toMatchObject({
        '/etc/temporal/config/tether': path.relative(ROOT, path.dirname(SERVER_CONFIG)),
        '/etc/temporal/config/dynamicconfig': path.relative(ROOT, path.dirname(DYNAMIC_CONFIG)),
      });
      expect(node.networks?.default?.aliases).toEqual(['temporal']);
    }
    expect(Object.keys(second.depends_on ?? {})).toEqual(['temporal-1']);
    expect(mounts(compose.services['temporal-ui'])).toMatchObject({ '/home/ui-server/config/docker.yaml': 'deploy/ui/docker.yaml' });
    expect(mounts(compose.services['temporal-schema'])).toMatchObject({ '/deploy/temporal-schema.sh': 'deploy/temporal-schema.sh' });
  });

  it('publishes every port on 127.0.0.1 only', () => {
    const published = Object.entries(compose.services).flatMap(([name, service]) => (service.ports ?? []).map((port) => ({ name, ip: hostIp(port) })));
    expect(published.map((p) => p.name).sort()).toEqual(['codec-server', 'panel', 'prometheus', 'temporal-1', 'temporal-2', 'temporal-ui']);
    for (const { name, ip } of published) expect(ip, name).toBe('127.0.0.1');
  });

  it('refuses to start without a panel token, and leaves the codec token to the codec server, which requires it', async () => {
    await expect(loadCompose()).rejects.toThrow(/TETHER_PANEL_TOKEN.*at least 24 characters/);
    expect(compose.services.panel.environment?.TETHER_PANEL_TOKEN).toBe(TOKEN.TETHER_PANEL_TOKEN);
    expect(compose.services['codec-server'].environment?.TETHER_CODEC_TOKEN || '').toBe('');
  });

  it('runs several workers, and lets the environment say how many', async () => {
    expect(Number(compose.services.worker.deploy?.replicas)).toBeGreaterThanOrEqual(2);
    const scaled = await loadCompose({ ...TOKEN, TETHER_WORKERS: '5' });
    expect(Number(scaled.services.worker.deploy?.replicas)).toBe(5);
  });

  it('configures every Tether process from the environment', async () => {
    for (const name of ['worker', 'panel']) {
      expect(Object.keys(compose.services[name].environment ?? {})).toEqual(
        expect.arrayContaining(['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TETHER_TASK_QUEUE']),
      );
    }
    const custom = await loadCompose({ ...TOKEN, TEMPORAL_NAMESPACE: 'agents', TETHER_TASK_QUEUE: 'tq' });
    expect(custom.services.worker.environment).toMatchObject({ TEMPORAL_NAMESPACE: 'agents', TETHER_TASK_QUEUE: 'tq' });
    expect(compose.services['codec-server'].environment).toHaveProperty('TETHER_CODEC_TOKEN');
    expect(compose.services['temporal-ui'].environment).toHaveProperty('TEMPORAL_CODEC_ENDPOINT');
  });

  it('serves worker metrics on all interfaces, and the panel and codec server on theirs', () => {
    expect(compose.services.worker.command).toEqual(expect.arrayContaining(['worker', '--metrics-host', '0.0.0.0']));
    expect(compose.services.panel.command).toEqual(expect.arrayContaining(['panel', '--host', '0.0.0.0']));
    expect(compose.services['codec-server'].command).toEqual(expect.arrayContaining(['codec-server', '--host', '0.0.0.0']));
  });

  it('has Prometheus scrape services and ports that exist', () => {
    const prometheus = parse(read('deploy/prometheus.yml')) as {
      scrape_configs: Array<{ job_name: string; static_configs?: Array<{ targets: string[] }>; dns_sd_configs?: Array<{ names: string[]; port: number }> }>;
    };
    const targets = prometheus.scrape_configs.flatMap((job) => [
      ...(job.static_configs ?? []).flatMap((c) => c.targets.map((t) => ({ host: t.split(':')[0], port: Number(t.split(':')[1]) }))),
      ...(job.dns_sd_configs ?? []).flatMap((c) => c.names.map((host) => ({ host, port: c.port }))),
    ]);
    expect(targets.map((t) => t.host)).toEqual(expect.arrayContaining(['worker', 'panel']));
    for (const { host, port } of targets) {
      expect(compose.services, host).toHaveProperty(host);
      if (host.startsWith('temporal-')) continue; // the nodes' PROMETHEUS_ENDPOINT, checked below
      expect(containerPorts(compose.services[host]), `${host}:${port}`).toContain(port);
    }
    expect(targets.map((t) => t.host)).toEqual(expect.arrayContaining(['temporal-1', 'temporal-2']));
    expect(compose.services['temporal-1'].environment?.PROMETHEUS_ENDPOINT).toBe('0.0.0.0:8000');
  });

  it("registers exactly Tether's search attributes in its init job", () => {
    const script = read('deploy/temporal-init.sh');
    const pairs = [...script.matchAll(/(Tether\w+)=(\w+)/g)].map(([, name, type]) => `${name}=${type}`);
    expect(pairs.sort()).toEqual(SEARCH_ATTRIBUTES.map(({ key, cliType }) => `${key.name}=${cliType}`).sort());
    expect(script).toContain('temporal operator search-attribute create');
  });

  it('builds the Tether image from node:20-slim with npm ci', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/^FROM node:20-slim$/m);
    expect(dockerfile).toMatch(/^RUN npm ci\b/m);
  });
});
