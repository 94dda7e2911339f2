import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { connectTemporal } from '../src/server/temporal-connection.js';
import proto from '@temporalio/proto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startDevServer, type DevServer } from '../src/server/dev-server.js';
import { ensureSearchAttributes } from '../src/server/search-attributes.js';
import { engineFlags } from '../src/server/engine-tuning.js';
import { freePort } from '../src/server/free-port.js';
import { SEARCH_ATTRIBUTES, searchAttributeFlags } from '../src/server/search-attributes.js';
import { findTemporalCli, withInstallLock } from '../src/server/temporal-cli.js';
import { eventually } from './helpers/eventually.js';
import { testConnection, uniqueTaskQueue } from './helpers/temporal.js';

const IVT = proto.temporal.api.enums.v1.IndexedValueType;
const EXPECTED: Record<string, number> = {
  TetherState: IVT.INDEXED_VALUE_TYPE_KEYWORD,
  TetherEmergencyStop: IVT.INDEXED_VALUE_TYPE_BOOL,
  TetherConsecutiveErrors: IVT.INDEXED_VALUE_TYPE_INT,
  TetherCostUsd: IVT.INDEXED_VALUE_TYPE_DOUBLE,
  TetherSteps: IVT.INDEXED_VALUE_TYPE_INT,
  TetherModel: IVT.INDEXED_VALUE_TYPE_KEYWORD,
  TetherForkOf: IVT.INDEXED_VALUE_TYPE_KEYWORD,
};

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-devserver-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('search attributes', () => {
  it('has the seven Tether search attributes as start-dev flags', () => {
    expect(searchAttributeFlags()).toEqual([
      '--search-attribute',
      'TetherState=Keyword',
      '--search-attribute',
      'TetherEmergencyStop=Bool',
      '--search-attribute',
      'TetherConsecutiveErrors=Int',
      '--search-attribute',
      'TetherCostUsd=Double',
      '--search-attribute',
      'TetherSteps=Int',
      '--search-attribute',
      'TetherModel=Keyword',
      '--search-attribute',
      'TetherForkOf=Keyword',
    ]);
    expect(SEARCH_ATTRIBUTES.map((a) => a.key.name).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it('are registered on the global-setup dev server with their types', async () => {
    const { connection } = await testConnection();
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    for (const [name, type] of Object.entries(EXPECTED)) expect(customAttributes?.[name], name).toBe(type);
  });
});

describe('startDevServer', () => {
  it('keeps workflows in its SQLite file across a stop and a start, and re-adds a missing search attribute', async () => {
    const dir = await tempDir();
    const db = path.join(dir, 'nested', 'state.db');
    const port = await freePort();
    const cli = inject('temporalCliPath');
    let server: DevServer = await startDevServer({ cli, port, db, headless: true });
    cleanups.push(() => server.stop());
    expect(server.address).toBe(`127.0.0.1:${port}`);
    expect(server.uiUrl).toBeNull();
    // The tuned engine: the process runs with the lifted limits, and SQLite keeps a write-ahead log beside the file.
    const cmdline = (await readFile(`/proc/${server.pid}/cmdline`, 'utf8')).split('\0');
    for (const flag of engineFlags({ db })) expect(cmdline).toContain(flag);
    expect(existsSync(`${db}-wal`)).toBe(true);

    const workflowId = `persist-${Date.now()}`;
    let connection = await connectTemporal({ address: server.address });
    let client = new Client({ connection });
    // Nobody polls this task queue: the execution simply stays Running.
    await client.workflow.start('nobodyRunsThis', { taskQueue: uniqueTaskQueue('persist'), workflowId, args: [] });
    // Drop one attribute, so the restart must add it back (a database from an older version).
    await connection.operatorService.removeSearchAttributes({ namespace: 'default', searchAttributes: ['TetherModel'] });
    await connection.close();

    await server.stop();
    expect(await server.exited).not.toBeUndefined();
    await expect(connectTemporal({ address: server.address, connectTimeout: 500 }).then((c) => c.workflowService.getSystemInfo({}))).rejects.toThrow();

    server = await startDevServer({ cli, port, db, headless: true });
    connection = await connectTemporal({ address: server.address });
    cleanups.push(() => connection.close());
    client = new Client({ connection });
    const description = await client.workflow.getHandle(workflowId).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.type).toBe('nobodyRunsThis');
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    for (const [name, type] of Object.entries(EXPECTED)) expect(customAttributes?.[name], name).toBe(type);
    expect(await ensureSearchAttributes(server.address)).toEqual([]);
    // And on a running server: a missing one is added, the rest left alone.
    await connection.operatorService.removeSearchAttributes({ namespace: 'default', searchAttributes: ['TetherSteps'] });
    expect(await ensureSearchAttributes(server.address, 'default')).toEqual(['TetherSteps']);
    const after = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    expect(after.customAttributes?.TetherSteps).toBe(IVT.INDEXED_VALUE_TYPE_INT);
    // A second server on the same file, on another port, would write to it too: it is refused, naming the first.
    await expect(startDevServer({ cli, port: await freePort(), db, headless: true })).rejects.toThrow(
      `the Temporal state in ${db} is in use by another Temporal server (pid ${server.pid}, at ${server.address})`,
    );
    // On its port too (a server whose Tether was SIGKILLed is left running): the server is named, with how to stop it, not only the port.
    await expect(startDevServer({ cli, port: Number(server.address.split(':').pop()), db, headless: true })).rejects.toThrow(
      `(pid ${server.pid}, at ${server.address}): use that one (TEMPORAL_ADDRESS=${server.address}), stop it (kill ${server.pid})`,
    );
  });

  it('says clearly when the port is taken', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => taken.close(resolve)));
    const port = (taken.address() as { port: number }).port;
    await expect(startDevServer({ port, db: null, headless: true, cli: inject('temporalCliPath') })).rejects.toThrow(
      `port ${port} is in use — is a Temporal server already running?`,
    );
    const globalPort = Number(inject('temporalAddress').split(':').pop());
    await expect(startDevServer({ port: globalPort, db: null, headless: true })).rejects.toThrow(/is in use .* use --port|pick another --port/i);
  });

  it('is not fooled by another server that takes the port between the check and its own bind', async () => {
    const dir = await tempDir();
    const port = await freePort();
    const otherPid = path.join(dir, 'other.pid');
    // Our "server" starts another one, outside its own process tree, on its port; then fails to bind, as it would.
    const cli = path.join(dir, 'temporal');
    await writeFile(
      cli,
      [
        '#!/bin/bash',
        `setsid -f sh -c 'echo $$ > ${otherPid}; exec ${inject('temporalCliPath')} server start-dev --port ${port} --headless --log-level error' >/dev/null 2>&1`,
        `until (echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null; do sleep 0.2; done`,
        'sleep 3',
        `echo "listen tcp 127.0.0.1:${port}: bind: address already in use" >&2`,
        'exit 1',
      ].join('\n'),
    );
    await chmod(cli, 0o755);
    cleanups.push(async () => process.kill(Number(await readFile(otherPid, 'utf8')), 'SIGKILL'));
    await expect(startDevServer({ cli, port, db: null, headless: true })).rejects.toThrow(`port ${port} is in use — is a Temporal server already running?`);
    expect(existsSync(otherPid)).toBe(true);
  }, 60_000);

  it('starts nothing once stopped (a Ctrl-C while the CLI was looked for), and stops what it started when stopped while it starts', async () => {
    const dir = await tempDir();
    const ran = path.join(dir, 'ran');
    const cli = path.join(dir, 'temporal');
    await writeFile(cli, `#!/bin/bash\ntouch ${ran}\nexec ${inject('temporalCliPath')} "$@"\n`);
    await chmod(cli, 0o755);
    const stop = new Error('interrupted: SIGINT');
    await expect(startDevServer({ cli, port: await freePort(), db: null, headless: true, signal: AbortSignal.abort(stop) })).rejects.toBe(stop);
    expect(existsSync(ran)).toBe(false);

    const port = await freePort();
    const midway = new AbortController();
    const starting = startDevServer({ cli, port, db: null, headless: true, signal: midway.signal });
    await eventually('the server process to be started', () => existsSync(ran));
    midway.abort(stop);
    await expect(starting).rejects.toBe(stop);
    expect(existsSync(ran)).toBe(true);
    const free: Server = createServer();
    await new Promise<void>((resolve, reject) => free.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((resolve) => free.close(resolve));
  }, 60_000);
});

describe('findTemporalCli', () => {
  it('honours TEMPORAL_CLI and sees through a wrapper script to the real binary', async () => {
    const real = inject('temporalCliPath');
    const dir = await tempDir();
    const wrapper = path.join(dir, 'temporal');
    await writeFile(wrapper, `#!/bin/sh\nexec ${real} "$@"\n`);
    await chmod(wrapper, 0o755);
    const before = process.env.TEMPORAL_CLI;
    try {
      process.env.TEMPORAL_CLI = real;
      expect(await findTemporalCli({ install: false })).toBe(real);
      process.env.TEMPORAL_CLI = wrapper;
      expect(await findTemporalCli({ install: false })).toBe(real);
    } finally {
      if (before === undefined) delete process.env.TEMPORAL_CLI;
      else process.env.TEMPORAL_CLI = before;
    }
  });

  it('serialises installers with a lock file and takes over a stale lock', async () => {
    const home = await tempDir();
    const events: string[] = [];
    const job = (name: string) =>
      withInstallLock(
        home,
        () => {},
        async () => {
          events.push(`${name}:start`);
          await sleep(150);
          events.push(`${name}:end`);
          return name;
        },
      );
    expect(await Promise.all([job('a'), job('b'), job('c')])).toEqual(['a', 'b', 'c']);
    for (let i = 0; i < events.length; i += 2) expect(events[i + 1]).toBe(events[i]!.replace('start', 'end'));

    // A lock left behind by a dead process on this host is stale.
    await writeFile(path.join(home, 'install.lock'), `999999999@${os.hostname()}`);
    const messages: string[] = [];
    expect(
      await withInstallLock(
        home,
        (m) => messages.push(m),
        async () => readFile(path.join(home, 'install.lock'), 'utf8'),
      ),
    ).toBe(`${process.pid}@${os.hostname()}`);
    expect(messages.join('\n')).toMatch(/stale install lock/);
  });
});
