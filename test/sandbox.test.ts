import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sandboxSchema, type SandboxSpec } from '../src/api/spec.js';
import { executeTool, type ToolContext } from '../src/tools/execute.js';
import { type SandboxHost, sandboxHost } from '../src/tools/host-probe.js';
import { processesWith, uniqueSleep, waitForProcesses } from './helpers/processes.js';

// Secrets outside /tmp: a sandboxed tool's /tmp is a private tmpfs, which would hide them for the wrong reason.
const outsideRoot = () => mkdtemp(path.join('/var/tmp', 'tether-sandbox-'));

let host: SandboxHost;
let ws: string;
beforeAll(async () => {
  host = await sandboxHost();
});
beforeEach(async () => {
  ws = await mkdtemp(path.join(os.tmpdir(), 'tether-sandbox-ws-'));
});

const sandbox = (over: Partial<SandboxSpec> = {}) => sandboxSchema.parse(over);
const ctx = (extra: Partial<ToolContext> = {}): ToolContext => ({
  workspace: ws,
  callId: `call-${Math.random().toString(16).slice(2)}`,
  timeoutMs: 20_000,
  env: process.env,
  host,
  ...extra,
});
const sh = (command: string, extra: Partial<ToolContext> = {}, timeoutMs?: number) =>
  executeTool('shell', { command, ...(timeoutMs ? { timeoutMs } : {}) }, ctx(extra));

describe('the machine', () => {
  it('runs bwrap, namespaces and call cgroups (the tests below rely on them)', () => {
    expect(host.bwrap).toEqual({ ok: true });
    expect(host.namespaces).toEqual({ ok: true });
    expect(host.cgroup?.parents).toMatchObject({ pids: expect.any(String), memory: expect.any(String) });
  });
});

describe('a sandboxed tool and the network', () => {
  let server: Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end('reached'));
    server.on('connection', () => {
      hits += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const probe = () =>
    `(exec 3<>/dev/tcp/127.0.0.1/${port} && echo BASH-CONNECTED); node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => { console.log('NODE-CONNECTED'); process.exit(0) }).on('error', (e) => console.log(e.code))"`;

  it('cannot reach a server on 127.0.0.1', async () => {
    const result = await sh(probe());
    expect(result.output).not.toMatch(/CONNECTED/);
    expect(result.output).toMatch(/ENETUNREACH|ECONNREFUSED|unreachable|refused/i);
    expect(hits).toBe(0);
  });

  it('cannot reach it in mode off either, nor without bwrap', async () => {
    for (const extra of [{ sandbox: sandbox({ mode: 'off' }) }, { host: { ...host, bwrap: { ok: false as const, reason: 'test' } } }]) {
      const result = await sh(probe(), extra);
      expect(result.output).not.toMatch(/CONNECTED/);
    }
    expect(hits).toBe(0);
  });

  it('cannot reach Unix sockets in the runtime directories (Docker, D-Bus, PostgreSQL live there)', async () => {
    const socket = `/run/tether-test-${process.pid}.sock`;
    const unix = createNetServer((s) => s.end('HELLO-FROM-HOST\n'));
    await new Promise<void>((resolve) => unix.listen(socket, resolve));
    try {
      const connect = `node -e "require('net').connect('${socket}').on('data', (d) => { process.stdout.write(d); process.exit(0) }).on('error', (e) => console.log(e.code))"`;
      for (const network of [false, true]) expect((await sh(connect, { sandbox: sandbox({ network }) })).output).toMatch(/ENOENT/);
    } finally {
      unix.close();
    }
  });

  it('reaches it when the run asks for the network', async () => {
    const result = await sh(probe(), { sandbox: sandbox({ network: true }) });
    expect(result.output).toMatch(/BASH-CONNECTED/);
    expect(hits).toBeGreaterThan(0);
  });
});

describe('a sandboxed tool and the filesystem', () => {
  it('cannot write outside the workspace, and its /tmp is its own', async () => {
    const outside = await outsideRoot();
    const mark = `tether-${Math.random().toString(16).slice(2)}`;
    const result = await sh(
      `touch /etc/${mark}; touch ${outside}/${mark}; touch $HOME/../${mark}; echo mine > /tmp/${mark} && cat /tmp/${mark}; mkdir -p sub && echo ok > sub/${mark}`,
    );
    expect(result.output).toMatch(/Read-only file system/);
    expect(result.output).toContain('mine');
    expect(existsSync(`/etc/${mark}`)).toBe(false);
    expect(await readdir(outside)).toEqual([]);
    expect(existsSync(`/tmp/${mark}`)).toBe(false);
    expect(await readFile(path.join(ws, 'sub', mark), 'utf8')).toBe('ok\n');
  });

  it("cannot read the worker's environment: not /proc/<worker>/environ, /proc/1/environ or ps e", async () => {
    // A process of the worker's with a secret in the environment the kernel keeps for it.
    const secret = `worker-secret-${Math.random().toString(16).slice(2)}`;
    const holder = spawn('sleep', ['60'], { env: { ...process.env, PGPASSWORD: secret }, stdio: 'ignore' });
    try {
      const environ = readFileSync('/proc/self/environ', 'utf8').split('\0').filter(Boolean);
      // Values that are paths can show up innocently (in the sandbox's own command line).
      const distinctive = environ.map((kv) => kv.slice(kv.indexOf('=') + 1)).filter((v) => v.length >= 12 && !v.startsWith('/') && !v.includes(':/'));
      const result = await sh(
        `cat /proc/${holder.pid}/environ /proc/${process.pid}/environ /proc/${process.ppid}/environ /proc/1/environ; ps e -A; ps -ef | wc -l`,
      );
      expect(readFileSync(`/proc/${holder.pid}/environ`, 'utf8')).toContain(secret);
      expect(result.output).not.toContain(secret);
      for (const value of distinctive) expect(result.output).not.toContain(value);
      // Only the tool's own processes are visible: its namespace's init, the shell and ps.
      expect(Number(result.output.trim().split('\n').pop())).toBeLessThan(8);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('gets no descriptor its worker inherited, so none leads outside the workspace', async () => {
    const outside = path.join(await outsideRoot(), 'inherited.txt');
    await writeFile(outside, '');
    const file = await open(outside, 'a');
    try {
      // The worker's own descriptors are close-on-exec; one handed to it by whatever started it is not.
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', fileURLToPath(new URL('./helpers/shell-tool-child.ts', import.meta.url)), ws, 'echo ESCAPED >&3; ls /proc/self/fd'],
        {
          stdio: ['ignore', 'pipe', 'inherit', file.fd],
        },
      );
      let out = '';
      child.stdout?.on('data', (d) => (out += d));
      await new Promise((resolve) => child.once('close', resolve));
      const result = JSON.parse(out) as { output: string };
      expect(result.output).toMatch(/Bad file descriptor/);
      expect(result.output.trim().split('\n').slice(-4)).toEqual(['0', '1', '2', '3']);
      expect(readFileSync(outside, 'utf8')).toBe('');
    } finally {
      await file.close();
    }
  });

  it('cannot read files outside the workspace that hold secrets', async () => {
    const root = await outsideRoot();
    const secrets = {
      tetherHome: path.join(root, 'tether-home'),
      tls: path.join(root, 'tls'),
      home: path.join(root, 'home'),
      extra: path.join(root, 'extra'),
    };
    await mkdir(path.join(secrets.tetherHome, 'workspaces', 'other-run'), { recursive: true });
    await writeFile(path.join(secrets.tetherHome, 'temporal.db'), 'SECRET-DATABASE');
    await writeFile(path.join(secrets.tetherHome, 'workspaces', 'other-run', 'notes.txt'), 'SECRET-OTHER-RUN');
    await mkdir(secrets.tls);
    await writeFile(path.join(secrets.tls, 'client.key'), 'SECRET-TLS-KEY');
    await mkdir(path.join(secrets.home, '.ssh'), { recursive: true });
    await writeFile(path.join(secrets.home, '.ssh', 'id_ed25519'), 'SECRET-SSH');
    await writeFile(path.join(secrets.home, '.npmrc'), 'SECRET-NPMRC');
    await writeFile(path.join(secrets.home, 'visible.txt'), 'not a dotfile');
    await writeFile(secrets.extra, 'SECRET-EXTRA');
    // The run's own workspace lies inside TETHER_HOME, as default workspaces do.
    const workspace = path.join(secrets.tetherHome, 'workspaces', 'this-run');
    await mkdir(workspace);
    const env = {
      ...process.env,
      TETHER_HOME: secrets.tetherHome,
      TEMPORAL_TLS_KEY: path.join(secrets.tls, 'client.key'),
      HOME: secrets.home,
      TETHER_SANDBOX_HIDE: secrets.extra,
    };
    const files = [
      path.join(secrets.tetherHome, 'temporal.db'),
      path.join(secrets.tetherHome, 'workspaces', 'other-run', 'notes.txt'),
      path.join(secrets.tls, 'client.key'),
      path.join(secrets.home, '.ssh', 'id_ed25519'),
      path.join(secrets.home, '.npmrc'),
      secrets.extra,
    ];
    const result = await sh(`cat ${files.join(' ')} ${path.join(secrets.home, 'visible.txt')}; echo written > mine.txt`, { workspace, env });
    expect(result.output).not.toMatch(/SECRET-/);
    expect(result.output).toContain('not a dotfile');
    expect(await readFile(path.join(workspace, 'mine.txt'), 'utf8')).toBe('written\n');
  });
});

describe('the limits of a sandboxed tool', () => {
  it('stops a fork bomb with a process-limit error, and the next call runs normally', async () => {
    const result = await sh(':(){ :|:& };:; sleep 30', { sandbox: sandbox({ maxProcesses: 32 }) }, 3_000);
    expect(result.success).toBe(false);
    expect(result.error).toMatch(/process limit of 32 reached/);
    expect(await sh('echo still fine')).toMatchObject({ success: true, output: 'still fine\n' });
  });

  it('stops a memory hog with a memory-limit error', async () => {
    const result = await sh(`node -e "const a = []; for (;;) a.push(Buffer.alloc(1e7, 1))"`, { sandbox: sandbox({ memoryMb: 128 }) });
    expect(result.success).toBe(false);
    expect(result.error).toMatch(/killed by SIGKILL.*memory limit of 128 MB reached/);
  });

  it('stops a memory hog by rlimit where no cgroup can', async () => {
    const result = await sh(`node -e "const a = []; for (;;) a.push(Buffer.alloc(1e7, 1))"`, {
      host: { ...host, cgroup: null },
      sandbox: sandbox({ memoryMb: 256 }),
    });
    expect(result.success).toBe(false);
    expect(result.output).toMatch(/out of memory|Allocation failed|ENOMEM|heap/i);
  });
});

/** Starts children that try to outlive the call: a new session, nohup, a double fork. */
const escapees = (t: string[]) => `setsid sleep ${t[0]} & nohup sleep ${t[1]} >/dev/null 2>&1 & (sleep ${t[2]} &) ;`;

describe.each([
  ['bwrap', {}],
  ['containment without bwrap', { host: 'no-bwrap' }],
  ['a plain process group in a cgroup', { host: 'no-namespaces' }],
] as const)('children that try to outlive their call (%s)', (_label, variant) => {
  const extra = (): Partial<ToolContext> => {
    if (!('host' in variant)) return {};
    const bwrap = { ok: false as const, reason: 'off for this test' };
    return { host: variant.host === 'no-bwrap' ? { ...host, bwrap } : { ...host, bwrap, namespaces: bwrap } };
  };
  const tokens = () => [uniqueSleep(), uniqueSleep(), uniqueSleep()];
  const gone = (t: string[]) => t.every((token) => processesWith(token).length === 0);

  it('die when the command exits normally', async () => {
    const t = tokens();
    const result = await sh(`${escapees(t)} sleep 0.3; echo done`, extra());
    expect(result).toMatchObject({ success: true });
    expect(gone(t)).toBe(true);
  });

  it('die when the call times out', async () => {
    const t = tokens();
    const result = await sh(`${escapees(t)} sleep 300`, extra(), 1_500);
    expect(result.error).toMatch(/timed out/);
    expect(gone(t)).toBe(true);
  });

  it('die when the call is cancelled', async () => {
    const t = tokens();
    const controller = new AbortController();
    const running = sh(`${escapees(t)} sleep 300`, { ...extra(), signal: controller.signal });
    await waitForProcesses(t[0]);
    await waitForProcesses(t[2]);
    controller.abort(new Error('cancelled by the test'));
    await expect(running).rejects.toThrow(/cancelled by the test/);
    expect(gone(t)).toBe(true);
  });
});

describe('a run whose sandbox the worker cannot provide', () => {
  const noBwrap = () => ({ ...host, bwrap: { ok: false as const, reason: 'bwrap: No permissions to create new namespace' } });

  it('gets a clear error per call and nothing runs, when it asked for bwrap explicitly', async () => {
    const result = await sh('touch ran.txt', { host: noBwrap(), sandbox: sandbox({ mode: 'bwrap' }) });
    expect(result).toMatchObject({ success: false, error: expect.stringMatching(/sandbox unavailable.*No permissions.*Nothing was run/) });
    expect(existsSync(path.join(ws, 'ran.txt'))).toBe(false);
  });

  it('runs with containment and says so, by default', async () => {
    const result = await sh('echo $$; ps -e | wc -l', { host: noBwrap() });
    expect(result.success).toBe(true);
    expect(result.output.split('\n')[0]).toBe('1');
    expect(result.warnings).toEqual([expect.stringMatching(/bwrap is unavailable on this worker.*containment only/)]);
  });
});
