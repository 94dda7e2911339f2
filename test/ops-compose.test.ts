import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
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
  ports?: Array<string | { target: number }>;
  deploy?: { replicas?: number | string };
  profiles?: string[];
}
type Compose = { services: Record<string, Service> };

/** Compose's `${VAR:-default}` / `${VAR}` interpolation, for when the docker CLI is not there to do it. */
function interpolate<T>(value: T, env: Record<string, string>): T {
  if (typeof value === 'string') {
    return value.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_m, name: string, fallback?: string) => env[name] || fallback || '') as T;
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
    const { stdout } = await run('docker', ['compose', '--profile', 'encryption', 'config', '--format', 'json'], { cwd: ROOT, env: { ...dockerEnv(), ...env }, timeout: 30_000 });
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

describe('docker-compose.yml', () => {
  let compose: Compose;
  beforeAll(async () => {
    compose = await loadCompose();
  });

  it('names every part of the deployment', () => {
    for (const name of ['postgresql', 'temporal-schema', 'temporal', 'temporal-init', 'temporal-ui', 'worker', 'panel', 'codec-server', 'prometheus']) {
      expect(compose.services, name).toHaveProperty(name);
    }
  });

  it('uses official images for everything it does not build itself', () => {
    const official = /^(postgres|temporalio\/(server|admin-tools|ui)|prom\/prometheus):[\w.-]+$/;
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build) continue;
      expect(service.image, name).toMatch(official);
    }
    expect(compose.services.postgresql.image).toBe('postgres:16');
  });

  it('runs several workers, and lets the environment say how many', async () => {
    expect(Number(compose.services.worker.deploy?.replicas)).toBeGreaterThanOrEqual(2);
    const scaled = await loadCompose({ TETHER_WORKERS: '5' });
    expect(Number(scaled.services.worker.deploy?.replicas)).toBe(5);
  });

  it('configures every Tether process from the environment', async () => {
    for (const name of ['worker', 'panel']) {
      expect(Object.keys(compose.services[name].environment ?? {})).toEqual(expect.arrayContaining(['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TETHER_TASK_QUEUE']));
    }
    const custom = await loadCompose({ TEMPORAL_NAMESPACE: 'agents', TETHER_TASK_QUEUE: 'tq' });
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
      if (host === 'temporal') continue; // the server's PROMETHEUS_ENDPOINT, checked below
      expect(containerPorts(compose.services[host]), `${host}:${port}`).toContain(port);
    }
    expect(compose.services.temporal.environment?.PROMETHEUS_ENDPOINT).toBe('0.0.0.0:8000');
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
