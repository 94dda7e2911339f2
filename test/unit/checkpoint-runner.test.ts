import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scriptRunner } from '../../src/tools/checkpoint-runner.js';
import { descendants, isProcessAlive } from '../../src/tools/process-tree.js';
import { eventually } from '../helpers/eventually.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function scratch(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-runner-'));
  dirs.push(dir);
  return dir;
}

const expectGone = (pid: number) => eventually(`process ${pid} gone`, () => !isProcessAlive(pid), Boolean, { timeoutMs: 5_000, intervalMs: 50 });

function killIfThere(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

const pidWritten = (file: string) =>
  eventually(
    `a pid in ${file}`,
    () => Number(readFileSync(file, 'utf8')),
    (pid) => pid > 0,
    { timeoutMs: 10_000, intervalMs: 50 },
  );

describe('the checkpoint runner (a long-lived bash)', () => {
  it('answers many parallel scripts, each with its own exit code and output', async () => {
    const runner = scriptRunner(env);
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => runner.run('sleep 0.0$(($1 % 5)); echo "out $1"; exit $(($1 % 3))', [String(i)], 30)),
    );
    expect(outcomes).toEqual(outcomes.map((_, i) => ({ code: i % 3, output: `out ${i}` })));
  });

  it('passes arguments as data, never as shell code (spaces, quotes, newlines, $(…))', async () => {
    const dir = await scratch();
    const marker = path.join(dir, 'ran');
    const tricky = `a b'"\n$(touch ${marker}) \`touch ${marker}\``;
    expect(await scriptRunner(env).run('printf %s "$1"', [tricky], 30)).toEqual({ code: 0, output: tricky });
    expect(existsSync(marker)).toBe(false);
    await expect(scriptRunner(env).run('true', ['a\0b'], 30)).rejects.toThrow('NUL');
  });

  it('keeps the end of a long output, where the answer is', async () => {
    const { code, output } = await scriptRunner(env).run('head -c 100000 /dev/zero | tr "\\0" x; echo; echo last', [], 30);
    expect(code).toBe(0);
    expect(output.length).toBeLessThanOrEqual(2_000);
    expect(output.endsWith('\nlast')).toBe(true);
  });

  it('kills a script and what it started once its time is up', async () => {
    const dir = await scratch();
    const started = Date.now();
    const outcome = await scriptRunner(env).run('sleep 30 & echo $! > "$1"; sleep 30; echo never', [path.join(dir, 'child')], 1);
    expect(outcome.code).toBe(137);
    expect(outcome.output).toContain('after 1 s');
    expect(Date.now() - started).toBeLessThan(10_000);
    await expectGone(Number(readFileSync(path.join(dir, 'child'), 'utf8')));
  });

  it('kills what is still running when its worker exits', async () => {
    const dir = await scratch();
    const pidFile = path.join(dir, 'child');
    const runner = new URL('../../src/tools/checkpoint-runner.ts', import.meta.url).href;
    const worker = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { scriptRunner } = await import(${JSON.stringify(runner)});
        scriptRunner({ PATH: process.env.PATH }).run('sleep 60 & echo $! > "$1"; wait', [${JSON.stringify(pidFile)}], 120);`,
      ],
      { stdio: 'ignore' },
    );
    const child = await pidWritten(pidFile);
    worker.kill('SIGKILL');
    await expectGone(child);
  });

  it('fails the requests of a runner that died, and starts a new one for the next', async () => {
    const runner = scriptRunner(env);
    expect(await runner.run('echo up', [], 30)).toEqual({ code: 0, output: 'up' });
    const bash = descendants(process.pid).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes("IFS= read -r -d ''");
      } catch {
        return false;
      }
    });
    const waiting = runner.run('sleep 30', [], 60);
    // The list may hold a request's subshell that has ended since: only a runner still there needs the kill.
    for (const pid of bash) killIfThere(pid);
    await expect(waiting).rejects.toThrow('the checkpoint runner stopped');
    expect(await runner.run('echo again', [], 30)).toEqual({ code: 0, output: 'again' });
  });
});
