import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, open, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { executeTool, MAX_READ_BYTES, type ToolContext } from '../src/tools/execute.js';
import { sandboxHost } from '../src/tools/host-probe.js';
import { LOG_HEAD_BYTES, LOG_TAIL_BYTES, outputLogPath } from '../src/tools/output-log.js';

let ws: string;
beforeEach(async () => {
  ws = await mkdtemp(path.join(os.tmpdir(), 'tether-io-'));
});

const ctx = async (extra: Partial<ToolContext> = {}): Promise<ToolContext> => ({
  workspace: ws,
  callId: `call-${Math.random().toString(16).slice(2)}`,
  timeoutMs: 20_000,
  env: process.env,
  host: await sandboxHost(),
  ...extra,
});
const read = async (p: string) => executeTool('read_file', { path: p }, await ctx());

describe('read_file of something that is not a regular file', () => {
  it('refuses a FIFO at once, even several at a time, and regular reads go on', async () => {
    for (const name of ['a', 'b', 'c', 'd', 'e']) execFileSync('mkfifo', [path.join(ws, name)]);
    await writeFile(path.join(ws, 'plain.txt'), 'plain text');
    const results = await Promise.all([...['a', 'b', 'c', 'd', 'e'].map(read), read('plain.txt')]);
    for (const result of results.slice(0, 5)) expect(result).toMatchObject({ success: false, error: expect.stringMatching(/is a FIFO \(named pipe\)/) });
    expect(results[5]).toMatchObject({ success: true, output: 'plain text' });
  });

  it('refuses a device and a socket, naming what they are', async () => {
    execFileSync('mknod', [path.join(ws, 'zero'), 'c', '1', '5']);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path.join(ws, 'sock'), resolve));
    try {
      expect(await read('zero')).toMatchObject({ success: false, error: expect.stringMatching(/zero is a character device/) });
      expect(await read('sock')).toMatchObject({ success: false, error: expect.stringMatching(/sock is a socket/) });
      await mkdir(path.join(ws, 'dir'));
      expect(await read('dir')).toMatchObject({ success: false, error: expect.stringMatching(/dir is a directory/) });
    } finally {
      server.close();
    }
  });

  it('reads only the head and tail of a huge file, saying how big it is', async () => {
    const file = path.join(ws, 'huge.bin');
    const handle = await open(file, 'w');
    await handle.write('HEAD-START');
    await handle.truncate(8 * 1024 ** 3);
    await handle.write('TAIL-END', 8 * 1024 ** 3 - 8);
    await handle.close();
    const result = await read('huge.bin');
    expect(result).toMatchObject({ success: true, truncated: true });
    expect(result.output.startsWith('HEAD-START')).toBe(true);
    expect(result.output.endsWith('TAIL-END')).toBe(true);
    expect(result.output).toContain(`omitted; read parts with the shell`);
    expect(result.output).toContain(`of ${8 * 1024 ** 3}`);
    expect(result.output.length).toBeLessThan(MAX_READ_BYTES + 200);
  });
});

describe("a command's output log", () => {
  it('keeps `yes` within its cap on disk and the worker within bounded memory', async () => {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 50);
    const c = await ctx();
    const result = await executeTool('shell', { command: 'yes', timeoutMs: 6_000 }, c).finally(() => clearInterval(sampler));
    expect(result.error).toMatch(/timed out/);
    const log = path.join(ws, outputLogPath(c.callId));
    expect((await stat(log)).size).toBeLessThan(LOG_HEAD_BYTES + LOG_TAIL_BYTES + 1_000);
    expect(await readFile(log, 'utf8')).toMatch(/\[\d+ bytes dropped: this log keeps the first \d+ and the last \d+ bytes of \d+\]/);
    expect(result.output.length).toBeLessThan(17_000);
    expect(peak - before).toBeLessThan(200 * 1024 * 1024);
  });

  it('stays in the workspace whatever the call id says', async () => {
    const c = await ctx({ callId: '../../../../tmp/escape/../x' });
    expect(await executeTool('shell', { command: 'echo hi' }, c)).toMatchObject({ success: true });
    expect(await readdir(path.join(ws, '.tether', 'outputs'))).toEqual([expect.stringMatching(/^____________tmp_escape____x-[0-9a-f]{16}\.log$/)]);
    expect(outputLogPath('a'.repeat(5_000))).toMatch(/^\.tether\/outputs\/a{80}-[0-9a-f]{16}\.log$/);
    // Ids that clean to the same name keep logs of their own.
    expect(outputLogPath('p/q')).not.toBe(outputLogPath('p_q'));
    expect(outputLogPath('p_q')).toBe('.tether/outputs/p_q.log');
  });

  it('replaces a symlink planted at its path instead of writing through it', async () => {
    const outside = await mkdtemp(path.join(os.tmpdir(), 'tether-io-outside-'));
    await writeFile(path.join(outside, 'victim.txt'), 'untouched');
    const c = await ctx();
    await mkdir(path.join(ws, '.tether', 'outputs'), { recursive: true });
    await symlink(path.join(outside, 'victim.txt'), path.join(ws, outputLogPath(c.callId)));
    expect(await executeTool('shell', { command: 'echo overwritten?' }, c)).toMatchObject({ success: true });
    expect(await readFile(path.join(outside, 'victim.txt'), 'utf8')).toBe('untouched');
    expect((await lstat(path.join(ws, outputLogPath(c.callId)))).isFile()).toBe(true);
  });

  it('does not hang on a FIFO planted at its path, and replaces an outputs directory linked out of the workspace, or a file in its way, without following it', async () => {
    const c = await ctx();
    await mkdir(path.join(ws, '.tether', 'outputs'), { recursive: true });
    execFileSync('mkfifo', [path.join(ws, outputLogPath(c.callId))]);
    expect(await executeTool('shell', { command: 'echo fine' }, c)).toMatchObject({ success: true, output: 'fine\n' });

    const other = await mkdtemp(path.join(os.tmpdir(), 'tether-io-ws-'));
    const outside = await mkdtemp(path.join(os.tmpdir(), 'tether-io-outside-'));
    await mkdir(path.join(other, '.tether'));
    await symlink(outside, path.join(other, '.tether', 'outputs'));
    expect(await executeTool('shell', { command: 'echo x' }, { ...c, workspace: other })).toMatchObject({ success: true, output: 'x\n' });
    expect(existsSync(outside) && (await readdir(outside))).toEqual([]);
    expect((await lstat(path.join(other, '.tether', 'outputs'))).isDirectory()).toBe(true);
    // A file where the directory should be: the call runs, and so does the next.
    const third = await mkdtemp(path.join(os.tmpdir(), 'tether-io-ws-'));
    await writeFile(path.join(third, '.tether'), 'x');
    for (const command of ['echo first', 'echo second'])
      expect(await executeTool('shell', { command }, { ...c, callId: command.replace(' ', '-'), workspace: third })).toMatchObject({ success: true });
  });
});
