import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { processesUnder } from '../../src/cluster/processes.js';
import { SANDBOX_HOME } from '../../src/tools/jail-plan.js';

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

async function sleeper(cwd: string, home: string): Promise<number> {
  const child = spawn('sleep', ['30'], { cwd, env: { PATH: process.env.PATH, HOME: home } });
  started.push(child);
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return child.pid!;
}

describe('what `tether cluster down` counts as a tool left behind', () => {
  it("finds processes working under the workers' directory with a tool's HOME, and leaves an operator's shell there alone", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'tether-leftovers-'));
    const workspace = path.join(root, 'worker-1', 'workspaces', 'run-1');
    await mkdir(workspace, { recursive: true });
    const unsandboxed = await sleeper(workspace, workspace);
    const sandboxed = await sleeper(workspace, SANDBOX_HOME);
    const onlooker = await sleeper(workspace, os.homedir());
    const elsewhere = await sleeper(os.tmpdir(), workspace);
    const found = processesUnder(root);
    expect(found).toEqual(expect.arrayContaining([unsandboxed, sandboxed]));
    expect(found).not.toContain(onlooker);
    expect(found).not.toContain(elsewhere);
  });
});
