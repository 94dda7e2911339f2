import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../src/activities/deps.js';
import { runCall } from '../../src/activities/tools.js';
import { executeTool } from '../../src/tools/execute.js';

let scratch: string;
let workspace: string;
beforeAll(async () => {
  scratch = await realpath(await mkdtemp(path.join(os.tmpdir(), 'tether-cancelled-')));
  workspace = path.join(scratch, 'ws');
});
// A cancelled call leaves its baseline to finish on its own: git may still be writing the repository as the scratch goes.
afterAll(() => rm(scratch, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 }));

const killed = () => {
  const controller = new AbortController();
  controller.abort(new Error('killed'));
  return controller;
};

describe('a call cancelled before it starts', () => {
  it('runs no command and writes no file', async () => {
    const ctx = { workspace: scratch, callId: 'c1', timeoutMs: 10_000, signal: killed().signal };
    await expect(executeTool('shell', { command: 'touch ran.txt' }, ctx)).rejects.toThrow('killed');
    await expect(executeTool('write_file', { path: 'written.txt', content: 'x' }, ctx)).rejects.toThrow('killed');
    expect(existsSync(path.join(scratch, 'ran.txt'))).toBe(false);
    expect(existsSync(path.join(scratch, 'written.txt'))).toBe(false);
  });

  it('is not carried out when the kill comes while the baseline checkpoint of its workspace is taken', async () => {
    await mkdir(workspace, { recursive: true });
    const deps = {
      env: { TETHER_HOME: path.join(scratch, 'home') },
      workspaceRoot: scratch,
      checkpointRoot: path.join(scratch, 'checkpoints'),
      logger: pino({ level: 'silent' }),
    } as unknown as ActivityDeps;
    const controller = new AbortController();
    const live = { signal: controller.signal, beat: () => {}, progress: () => {} };
    const input = { runId: 'r1', call: { id: 'c1', name: 'shell', args: { command: 'touch ran.txt' } }, timeoutMs: 10_000 };
    const host = async () => {
      throw new Error('a cancelled call must not reach the sandbox');
    };
    const calling = runCall(deps, host, input, workspace, live);
    controller.abort(new Error('killed during the baseline'));
    await expect(calling).rejects.toThrow('killed during the baseline');
    expect(existsSync(path.join(workspace, 'ran.txt'))).toBe(false);
  });
});
