import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { freePort } from '../src/server/free-port.js';
import { allGone, type CliProcess, startCli } from './helpers/cli-process.js';
import { eventually } from './helpers/eventually.js';
import { uniqueTaskQueue } from './helpers/temporal.js';

const started: CliProcess[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const p of started.splice(0)) {
    for (const pid of p.tree()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already, as it should be.
      }
    }
  }
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

async function home(): Promise<NodeJS.ProcessEnv> {
  return {
    ...process.env,
    TEMPORAL_CLI: inject('temporalCliPath'),
    TETHER_HOME: await mkdtemp(path.join(os.tmpdir(), 'tether-signals-')),
    TETHER_TASK_QUEUE: uniqueTaskQueue('signals'),
  };
}

/** A local stack's ports, all free. */
async function stackPorts(): Promise<string[]> {
  return ['--port', String(await freePort()), '--ui-port', String(await freePort()), '--panel-port', String(await freePort())];
}

function run(args: string[], env: NodeJS.ProcessEnv, pty = false): CliProcess {
  const p = startCli(args, { env, pty });
  started.push(p);
  return p;
}

/** Stops the command the way `how` says and checks that it exits cleanly, leaving no process of its tree behind. */
async function stopsCleanly(p: CliProcess, how: 'ctrl-c' | NodeJS.Signals): Promise<void> {
  const tree = p.tree();
  expect(tree.length, 'the command and what it started').toBeGreaterThan(0);
  if (how === 'ctrl-c') p.ctrlC();
  else process.kill(p.child.pid!, how);
  expect(await p.exited, p.output()).toBe(0);
  expect(p.output()).toMatch(/stopping .*press Ctrl-C again to force/);
  expect(p.output()).not.toMatch(/Not running. Current state|^error:/m);
  await allGone(tree);
}

describe('one Ctrl-C or SIGTERM stops everything a command started', () => {
  it('stops tether demo (server, worker, panel) on Ctrl-C in a terminal', async () => {
    const p = run(['demo', ...(await stackPorts())], await home(), true);
    await p.waitFor('Ctrl-C to stop.');
    await stopsCleanly(p, 'ctrl-c');
  }, 120_000);

  it('stops tether demo on a SIGTERM or a SIGINT sent to its pid alone', async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const p = run(['demo', ...(await stackPorts())], await home());
      await p.waitFor('Ctrl-C to stop.');
      await stopsCleanly(p, signal);
    }
  }, 180_000);

  it('stops tether dev on a SIGINT that comes while its worker connects, without waiting for the connection to give up', async () => {
    const dev = run(['dev', ...(await stackPorts())], await home());
    await dev.waitFor('Temporal dev server ready');
    process.kill(dev.child.pid!, 'SIGINT');
    expect(await dev.exited, dev.output()).toBe(0);
    expect(dev.output()).not.toMatch(/Namespace default was not found|^error:/m);
  }, 120_000);

  it('stops tether dev (its worker serving metrics and health) and tether server on SIGTERM, and tether server on Ctrl-C', async () => {
    const metricsPort = await freePort();
    const dev = run(['dev', ...(await stackPorts()), '--metrics-port', String(metricsPort)], await home());
    await dev.waitFor('Ctrl-C to stop.');
    expect(dev.output()).toContain(`metrics, /live and /ready on http://127.0.0.1:${metricsPort}`);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/ready`)).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/^tether_/m);
    expect(metrics).toMatch(/^temporal_/m);
    await stopsCleanly(dev, 'SIGTERM');
    const env = await home();
    const args = ['server', '--port', String(await freePort()), '--ui-port', String(await freePort()), '--db', path.join(env.TETHER_HOME!, 'server.db')];
    const server = run(args, env, true);
    await server.waitFor('Ctrl-C to stop.');
    await stopsCleanly(server, 'ctrl-c');
  }, 180_000);

  it("keeps stdout to the one JSON object of `tether server --output json`: the Temporal CLI's own lines go to stderr", async () => {
    const env = await home();
    const tether = fileURLToPath(new URL('../bin/tether.js', import.meta.url));
    const [httpPort, metricsPort] = [await freePort(), await freePort()];
    const ports = [
      '--port',
      String(await freePort()),
      '--ui-port',
      String(await freePort()),
      '--http-port',
      String(httpPort),
      '--metrics-port',
      String(metricsPort),
    ];
    const args = ['server', ...ports, '--db', path.join(env.TETHER_HOME!, 's.db')];
    const child = spawn(process.execPath, [tether, ...args, '--output', 'json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await eventually(
        'the server to announce itself',
        async () => stdout,
        (out) => out.includes('\n'),
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      expect(stdout.trim().split('\n'), stderr).toHaveLength(1);
      expect(JSON.parse(stdout)).toMatchObject({
        address: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
        httpPort,
        metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
      });
      // The server's own ports are the ones asked for, not ones it picked.
      expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    expect(stdout.trim().split('\n')).toHaveLength(1);
  }, 90_000);

  it('stops tether worker and tether panel against a running server, on Ctrl-C and on SIGTERM', async () => {
    const env = { ...(await home()), TEMPORAL_ADDRESS: inject('temporalAddress') };
    const worker = run(['worker', '--metrics-port', String(await freePort())], env, true);
    await worker.waitFor('Ctrl-C to stop.');
    await stopsCleanly(worker, 'ctrl-c');
    const panel = run(['panel', '--port', String(await freePort())], env);
    await panel.waitFor('Ctrl-C to stop.');
    await stopsCleanly(panel, 'SIGTERM');
  }, 120_000);

  it('exits at once on a second Ctrl-C, killing the Temporal server it started', async () => {
    const p = run(['dev', ...(await stackPorts())], await home(), true);
    await p.waitFor('Ctrl-C to stop.');
    const tree = p.tree();
    p.ctrlC();
    await p.waitFor('press Ctrl-C again to force');
    p.ctrlC();
    expect(await p.exited).toBe(130);
    await allGone(tree);
  }, 120_000);

  it('takes its Temporal server down with it when it is SIGKILLed, so the ports and the state are free for the next one', async () => {
    const env = await home();
    const args = ['server', '--port', String(await freePort()), '--ui-port', String(await freePort())];
    const server = run(args, env);
    await server.waitFor('Ctrl-C to stop.');
    const tree = server.tree();
    expect(tree.length, 'tether server and the Temporal server it started').toBeGreaterThan(1);
    server.child.kill('SIGKILL');
    await allGone(tree);
    const again = run(args, env);
    await again.waitFor('Ctrl-C to stop.');
    await stopsCleanly(again, 'SIGTERM');
  }, 120_000);
});

describe('a Temporal server that a local stack started and that dies', () => {
  it('is reported, with where its state is kept, and everything else stops (exit 1): tether dev, tether server, and a demo following its run', async () => {
    for (const [args, up] of [
      [['dev', ...(await stackPorts())], 'Ctrl-C to stop.'],
      [['server', '--port', String(await freePort()), '--ui-port', String(await freePort())], 'Ctrl-C to stop.'],
      [['demo', ...(await stackPorts())], 'started demo-'],
    ] as const) {
      const p = run([...args], await home());
      await p.waitFor(up);
      const tree = p.tree();
      const server = tree.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('start-dev'));
      expect(server, `the Temporal server among ${tree.join(', ')}`).toBeDefined();
      process.kill(server!, 'SIGKILL');
      expect(await p.exited, p.output()).toBe(1);
      expect(p.output()).toMatch(
        new RegExp(
          `the Temporal server \\(pid ${server}\\) ended by itself \\(signal SIGKILL\\); its state is kept in .+temporal\\.db\\. Stopping everything; \`tether ${args[0]}\` starts it again\\.`,
        ),
      );
      await allGone(tree);
    }
  }, 180_000);
});

async function occupy(): Promise<number> {
  // Answers nothing and hangs up on whoever connects, so closing it never waits.
  const server = createServer((socket) => socket.destroy());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

describe('a busy port is reported with the way out, before anything starts', () => {
  it('names the busy port, its flag and a free one to pass, for every verb that binds one, and starts nothing', async () => {
    const busy = await occupy();
    const env = { ...(await home()), TEMPORAL_ADDRESS: inject('temporalAddress') };
    const cases: Array<[string[], RegExp]> = [
      [
        ['demo', '--port', String(await freePort()), '--ui-port', String(await freePort()), '--panel-port', String(busy)],
        /the panel's --panel-port\); pick another: tether demo --panel-port \d+/,
      ],
      [['dev', '--port', String(busy), '--panel-port', String(await freePort())], /Temporal's --port\); pick another: tether dev --port \d+/],
      [
        ['dev', '--port', String(await freePort()), '--ui-port', String(busy), '--panel-port', '0'],
        /the Temporal UI's --ui-port\); pick another: tether dev --ui-port \d+/,
      ],
      [['server', '--port', String(busy)], /Temporal's --port\); pick another: tether server --port \d+/],
      [['panel', '--port', String(busy)], /the panel's --port\); pick another: tether panel --port \d+/],
      [['worker', '--metrics-port', String(busy)], /the worker's metrics --metrics-port\); pick another: tether worker --metrics-port \d+/],
    ];
    for (const [args, wayOut] of cases) {
      const p = run(args, env);
      expect(await p.exited, p.output()).toBe(1);
      expect(p.output()).toContain(`port ${busy} is in use`);
      expect(p.output()).toMatch(wayOut);
      expect(p.output()).not.toMatch(/Starting the Temporal dev server|polling/);
    }
  }, 120_000);

  it('says a host that is not an address of this machine is the problem, not a busy port', async () => {
    const env = await home();
    const port = String(await freePort());
    for (const [args, host] of [
      [['worker', '--metrics-host', '10.255.255.254', '--metrics-port', port], '10.255.255.254'],
      [['panel', '--host', 'no-such-host.invalid', '--port', port], 'no-such-host.invalid'],
    ] as const) {
      const p = run([...args], env);
      expect(await p.exited, p.output()).toBe(1);
      expect(p.output()).toMatch(
        new RegExp(`cannot listen on ${host.replaceAll('.', '\\.')}:${port} \\(.+\\): ${host.replaceAll('.', '\\.')} is not an address of this machine`),
      );
      expect(p.output()).not.toContain('is in use');
    }
  }, 60_000);

  it('refuses one port given to two flags, naming both, before anything starts (exit 2)', async () => {
    const env = await home();
    const port = String(await freePort());
    for (const [args, flags] of [
      [['server', '--port', port, '--ui-port', port], '--port and --ui-port'],
      [['dev', '--port', String(await freePort()), '--ui-port', port, '--panel-port', port], '--ui-port and --panel-port'],
    ] as const) {
      const p = run([...args], env);
      expect(await p.exited, p.output()).toBe(2);
      expect(p.output()).toContain(`${flags} are both ${port}: give each its own port`);
      expect(p.output()).not.toMatch(/Starting the Temporal dev server|FATAL/);
    }
  }, 60_000);

  it('has tether doctor check the panel port', async () => {
    const busy = await occupy();
    const env = { ...(await home()), TEMPORAL_ADDRESS: inject('temporalAddress') };
    const p = run(['doctor', '--panel-port', String(busy), '--output', 'json'], env);
    expect(await p.exited, p.output()).toBe(0);
    const report = JSON.parse(p.output().trim().split('\n').at(-1)!);
    expect(report.checks.find((c: { name: string }) => c.name === 'panel port')).toMatchObject({
      status: 'warn',
      detail: `${busy} is taken by another program`,
    });
  }, 60_000);
});
