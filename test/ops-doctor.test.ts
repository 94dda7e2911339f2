import { randomBytes } from 'node:crypto';
import { Client, type Connection } from '@temporalio/client';
import { connectTemporal } from '../src/server/temporal-connection.js';
import proto from '@temporalio/proto';
import { msToTs } from '@temporalio/common/lib/time.js';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { registerOpsCommands } from '../src/cli/commands/ops.js';
import { dataConverterFromEnv, keyId } from '../src/ops/codec.js';
import { runDoctor, type DoctorReport } from '../src/ops/doctor.js';
import { freePort } from '../src/server/free-port.js';
import { SEARCH_ATTRIBUTES } from '../src/server/search-attributes.js';
import { eventually } from './helpers/eventually.js';

const { IndexedValueType } = proto.temporal.api.enums.v1;

const SECRET = 'sk-doctor-DO-NOT-PRINT-0123456789';
const KEY = randomBytes(32).toString('base64');
const found = async () => '/usr/bin/temporal';

const check = (report: DoctorReport, name: string) => report.checks.find((c) => c.name === name);

/** Registers a namespace and starts one encrypted run in it, so it is that namespace's newest run. */
async function namespaceWithEncryptedRun(connection: Connection, namespace: string, withAttributes: boolean): Promise<void> {
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  if (withAttributes) {
    const searchAttributes = Object.fromEntries(
      SEARCH_ATTRIBUTES.map(({ key, cliType }) => [key.name, IndexedValueType[`INDEXED_VALUE_TYPE_${cliType.toUpperCase()}` as 'INDEXED_VALUE_TYPE_KEYWORD']]),
    );
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  }
  const client = new Client({ connection, namespace, dataConverter: dataConverterFromEnv({ TETHER_ENCRYPTION_KEY: KEY }) });
  // A new namespace reaches the server's cache a moment later; until then a start is refused.
  await eventually(
    `a run started in namespace ${namespace}`,
    () => client.workflow.start('agentRun', { taskQueue: 'doctor-idle', workflowId: 'doctor-encrypted', args: [{ goal: 'x', model: 'scripted:x' }] }),
    Boolean,
    { intervalMs: 200 },
  );
}

describe('tether doctor', () => {
  const address = inject('temporalAddress');
  // Namespaces of our own, so their newest run is ours whatever other test files run meanwhile.
  const healthy = `doctor-ok-${process.pid}`;
  const bare = `doctor-bare-${process.pid}`;
  let connection: Connection;

  beforeAll(async () => {
    connection = await connectTemporal({ address });
    await Promise.all([namespaceWithEncryptedRun(connection, healthy, true), namespaceWithEncryptedRun(connection, bare, false)]);
  });
  afterAll(async () => connection?.close());

  it('passes a healthy set-up and names provider keys without printing them', async () => {
    const report = await runDoctor({
      env: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: healthy, OPENAI_API_KEY: SECRET, TETHER_ENCRYPTION_KEY: KEY, TETHER_CODEC_TOKEN: 'token' },
      metricsPort: await freePort(),
      findCli: found,
    });
    expect(report.ok).toBe(true);
    for (const name of ['temporal', 'namespace', 'search attributes', 'versions', 'provider keys', 'encryption', 'metrics port', 'temporal cli']) {
      expect(check(report, name)?.status, name).toBe('ok');
    }
    expect(check(report, 'provider keys')!.detail).toContain('OPENAI_API_KEY: set');
    expect(check(report, 'provider keys')!.detail).toContain('ANTHROPIC_API_KEY: not set');
    expect(check(report, 'encryption')!.detail).toContain(`key ${keyId(Buffer.from(KEY, 'base64'))}; round trip ok`);
    expect(JSON.stringify(report)).not.toContain(SECRET);
    expect(JSON.stringify(report)).not.toContain(KEY);
  });

  it('fails when Temporal is unreachable and says how to start it', async () => {
    const report = await runDoctor({ env: { TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` }, metricsPort: await freePort(), findCli: found });
    expect(report.ok).toBe(false);
    expect(check(report, 'temporal')).toMatchObject({ status: 'fail', fix: expect.stringContaining('tether server') });
  });

  it('fails for a namespace the server lacks, and marks what it could not check there', async () => {
    const report = await runDoctor({
      env: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'no-such-namespace' },
      metricsPort: await freePort(),
      findCli: found,
    });
    expect(check(report, 'namespace')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('temporal operator namespace create --namespace no-such-namespace'),
    });
    for (const name of ['search attributes', 'workers'])
      expect(check(report, name), name).toMatchObject({ status: 'warn', detail: 'not checked: no namespace no-such-namespace' });
  });

  it('lists missing search attributes with the commands that create them', async () => {
    const report = await runDoctor({
      env: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: bare, TETHER_ENCRYPTION_KEY: KEY },
      metricsPort: await freePort(),
      findCli: found,
    });
    const attributes = check(report, 'search attributes')!;
    expect(attributes.status).toBe('fail');
    expect(attributes.detail).toContain('TetherState (Keyword)');
    expect(attributes.fix).toContain(`temporal operator search-attribute create --address ${address} --namespace ${bare} --name TetherState --type Keyword`);
  });

  it('fails for a malformed key, and for stored runs its keys cannot read', async () => {
    const base = { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: bare };
    const port = await freePort();
    const malformed = await runDoctor({ env: { ...base, TETHER_ENCRYPTION_KEY: 'short' }, metricsPort: port, findCli: found });
    expect(check(malformed, 'encryption')).toMatchObject({ status: 'fail', detail: expect.stringMatching(/32 bytes/) });

    const otherKey = await runDoctor({ env: { ...base, TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') }, metricsPort: port, findCli: found });
    expect(check(otherKey, 'encryption')).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining(`encrypted with key ${keyId(Buffer.from(KEY, 'base64'))}`),
    });

    const noKey = await runDoctor({ env: base, metricsPort: port, findCli: found });
    expect(check(noKey, 'encryption')).toMatchObject({ status: 'fail', detail: expect.stringContaining('no key is set') });
  });

  it('warns when the metrics port is taken by something that is not a worker', async () => {
    const { createServer } = await import('node:net');
    const squatter = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => squatter.once('listening', resolve));
    const port = (squatter.address() as { port: number }).port;
    try {
      const report = await runDoctor({ env: { TEMPORAL_ADDRESS: address }, metricsPort: port, findCli: found });
      expect(check(report, 'metrics port')).toMatchObject({ status: 'warn', fix: expect.stringContaining('--metrics-port') });
    } finally {
      squatter.close();
    }
  });

  it('says whether traces are off, exported, or going nowhere', async () => {
    const { createServer } = await import('node:http');
    const paths: string[] = [];
    const collector = createServer((req, res) => {
      paths.push(req.url ?? '');
      res.end('{}');
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => collector.once('listening', resolve));
    const endpoint = `http://127.0.0.1:${(collector.address() as { port: number }).port}`;
    try {
      const env = { TEMPORAL_ADDRESS: address };
      expect(check(await runDoctor({ env, metricsPort: await freePort(), findCli: found }), 'traces')).toMatchObject({
        status: 'ok',
        detail: expect.stringMatching(/^off/),
      });
      const exporting = await runDoctor({ env: { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: `${endpoint}/` }, metricsPort: await freePort(), findCli: found });
      expect(check(exporting, 'traces')).toMatchObject({ status: 'ok', detail: `exporting to ${endpoint}/v1/traces` });
      expect(paths).toEqual(['/v1/traces']);
      const nowhere = await runDoctor({
        env: { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}` },
        metricsPort: await freePort(),
        findCli: found,
      });
      expect(check(nowhere, 'traces')).toMatchObject({ status: 'warn', detail: expect.stringContaining('spans will be dropped') });
    } finally {
      collector.close();
    }
  });

  it('prints one JSON object on the last stdout line and exits 1 on a failure', async () => {
    const writes: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      writes.push(String(chunk));
      return true;
    });
    vi.stubEnv('TEMPORAL_ADDRESS', `127.0.0.1:${await freePort()}`);
    try {
      const program = new Command('tether').exitOverride();
      registerOpsCommands(program);
      await program.parseAsync(['node', 'tether', 'doctor', '--output', 'json', '--metrics-port', String(await freePort())]);
    } finally {
      spy.mockRestore();
      vi.unstubAllEnvs();
    }
    const last = writes.join('').trim().split('\n').at(-1)!;
    const report = JSON.parse(last) as DoctorReport;
    expect(report.ok).toBe(false);
    expect(check(report, 'temporal')?.status).toBe('fail');
    expect(process.exitCode).toBe(1);
    process.exitCode = 0;
  });
});
