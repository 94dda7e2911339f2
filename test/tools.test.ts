import { mkdir, mkdtemp, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { executeTool } from '../src/tools/execute.js';
import { OutputLog } from '../src/tools/output-log.js';
import { isProcessAlive, runProcess } from '../src/tools/process-runner.js';
import { parseToolArgs } from '../src/api/tools.js';
import { resolveInWorkspace, WorkspaceEscapeError, writeFileAtomic } from '../src/tools/workspace.js';
import { eventually } from './helpers/eventually.js';

let ws: string;
beforeEach(async () => {
  ws = await mkdtemp(path.join(os.tmpdir(), 'tether-tools-'));
});

const ctx = (extra: Record<string, unknown> = {}) => ({ workspace: ws, callId: `call-${Math.random().toString(16).slice(2)}`, timeoutMs: 10_000, ...extra });

function pids(file: string): Promise<number[]> {
  return eventually(
    `three pids in ${file}`,
    async () => (await readFile(file, 'utf8')).split(/\s+/).filter(Boolean).map(Number),
    (found) => found.length >= 3,
    { intervalMs: 50 },
  );
}

describe('the process runner', () => {
  it('kills the whole process tree at the timeout', async () => {
    const outcome = await runProcess({
      command: `sleep 300 & echo $! >> ${ws}/p; sleep 300 & echo $! >> ${ws}/p; echo $$ >> ${ws}/p; wait`,
      cwd: ws,
      env: {},
      timeoutMs: 800,
      killGraceMs: 500,
    });
    expect(outcome.timedOut).toBe(true);
    for (const pid of await pids(`${ws}/p`)) expect(isProcessAlive(pid)).toBe(false);
  });

  it('kills the tree on abort and reports it', async () => {
    const controller = new AbortController();
    const running = runProcess({
      command: `sleep 300 & echo $! >> ${ws}/p; sleep 300 & echo $! >> ${ws}/p; echo $$ >> ${ws}/p; wait`,
      cwd: ws,
      env: {},
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    const tree = await pids(`${ws}/p`);
    controller.abort();
    expect((await running).aborted).toBe(true);
    for (const pid of tree) expect(isProcessAlive(pid)).toBe(false);
  });

  it('does not let a background job outlive a finished command', async () => {
    const outcome = await runProcess({ command: `sleep 300 & echo $! > ${ws}/bg; echo done`, cwd: ws, env: {}, timeoutMs: 10_000 });
    expect(outcome).toMatchObject({ exitCode: 0, timedOut: false });
    expect(isProcessAlive(Number(await readFile(`${ws}/bg`, 'utf8')))).toBe(false);
  });

  it('captures interleaved output and the exit code', async () => {
    const outcome = await runProcess({ command: 'echo out; echo err >&2; exit 3', cwd: ws, env: {}, timeoutMs: 10_000 });
    expect(outcome.exitCode).toBe(3);
    expect(outcome.output).toContain('out');
    expect(outcome.output).toContain('err');
  });

  it('caps a huge output with head and tail for the caller, and the log on disk likewise', async () => {
    const log = await OutputLog.create(ws, 'huge', { head: 100_000, tail: 50_000 });
    const outcome = await runProcess({
      command: "printf 'START'; head -c 5000000 /dev/zero | tr '\\0' a; printf 'END'",
      cwd: ws,
      env: {},
      timeoutMs: 30_000,
      log,
      maxOutputChars: 1_000,
    });
    expect(outcome.truncated).toBe(true);
    expect(outcome.output.length).toBeLessThan(1_200);
    expect(outcome.output.startsWith('START')).toBe(true);
    expect(outcome.output.endsWith('END')).toBe(true);
    expect(outcome.output).toContain('see .tether/outputs/huge.log');
    const onDisk = await readFile(path.join(ws, log.relPath), 'utf8');
    expect(onDisk.startsWith('START')).toBe(true);
    expect(onDisk.endsWith('aaaEND')).toBe(true);
    expect(onDisk).toContain('[4850008 bytes dropped: this log keeps the first 100000 and the last 50000 bytes of 5000008]');
    expect(onDisk.length).toBeLessThan(151_000);
  });
});

describe('the workspace tools', () => {
  it('gives a shell no provider keys, no Temporal address and nothing else off the allow-list', async () => {
    const secrets = {
      OPENAI_API_KEY: 'sk-secret-value-123',
      ANTHROPIC_API_KEY: 'sk-ant-secret',
      TETHER_PANEL_TOKEN: 'tok-secret-123',
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      PGPASSWORD: 'pg-secret-456',
      DATABASE_URL: 'postgres://app:db-secret@db/app',
      GITHUB_PAT: 'ghp_secret789',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer otel-secret',
    };
    const result = await executeTool('shell', { command: 'env' }, ctx({ env: { ...process.env, ...secrets } }));
    expect(result.success).toBe(true);
    expect(result.output).toContain('PATH=');
    for (const [name, value] of Object.entries(secrets)) {
      expect(result.output).not.toContain(`${name}=`);
      expect(result.output).not.toContain(value);
    }
  });

  it('reports a timeout as a failed result, not an exception', async () => {
    const result = await executeTool('shell', { command: 'sleep 30', timeoutMs: 300 }, ctx());
    expect(result).toMatchObject({ success: false });
    expect(result.error).toMatch(/timed out after 0.3s \(process tree killed\)/);
  });

  it('denies paths outside the workspace: parents, absolute paths and symlinks', async () => {
    const outside = await mkdtemp(path.join(os.tmpdir(), 'tether-out-'));
    await writeFile(path.join(outside, 'secret.txt'), 'secret');
    await symlink(outside, path.join(ws, 'link'));
    await mkdir(path.join(ws, 'sub'));
    await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'sub', 'file'));
    for (const p of ['../x', '/etc/passwd', 'link/secret.txt', 'sub/file', 'a/../../x']) {
      const read = await executeTool('read_file', { path: p }, ctx());
      expect(read.success, p).toBe(false);
      expect(read.error).toMatch(/escapes the workspace/);
    }
    const write = await executeTool('write_file', { path: 'link/new.txt', content: 'x' }, ctx());
    expect(write.error).toMatch(/escapes the workspace/);
    expect(await readdir(outside)).toEqual(['secret.txt']);
    await expect(resolveInWorkspace(ws, '')).rejects.toBeInstanceOf(WorkspaceEscapeError);
  });

  it('writes atomically, replacing content and leaving no temp files', async () => {
    const file = path.join(ws, 'deep', 'f.txt');
    await writeFileAtomic(file, 'one');
    await writeFileAtomic(file, 'two');
    expect(await readFile(file, 'utf8')).toBe('two');
    expect(await readdir(path.dirname(file))).toEqual(['f.txt']);
  });

  it('says a write onto a directory is one, naming the path it was given, not the paths it wrote through', async () => {
    await mkdir(path.join(ws, 'realdir'));
    const write = await executeTool('write_file', { path: 'realdir', content: 'x' }, ctx());
    expect(write).toMatchObject({ success: false, error: expect.stringContaining('EISDIR: realdir is a directory; write_file writes files') });
    expect(write.error).not.toContain('/proc/self/fd');
    expect(await readdir(path.join(ws, 'realdir'))).toEqual([]);
  });

  it('turns bad arguments into a clear failed result', async () => {
    expect(await executeTool('write_file', { path: 'x' }, ctx())).toMatchObject({ success: false, error: expect.stringMatching(/content/) });
    expect(parseToolArgs('shell', { command: 'ls', sudo: true })).toMatchObject({ ok: false, error: expect.stringMatching(/sudo/) });
  });
});
