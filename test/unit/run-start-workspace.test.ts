import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../src/activities/deps.js';
import { workspaceFor } from '../../src/activities/workspace.js';
import { checkRunStart } from '../../src/client/run-start-check.js';

const spec = (workspace: string) => ({ goal: 'x', model: 'scripted:demo', workspace });

describe('the workspace a run starts with', () => {
  it('is refused when it is a file or a device here, before anything is sent', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-ws-check-'));
    const file = path.join(dir, 'notes.txt');
    await writeFile(file, 'not a directory');
    for (const workspace of [file, '/dev/null']) {
      await expect(checkRunStart(spec(workspace))).rejects.toMatchObject({
        code: 'invalid',
        message: `invalid RunSpec: workspace ${workspace} is not a directory`,
      });
    }
  });

  it('is taken when it is a directory, or does not exist yet (the worker creates it), and made absolute', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-ws-check-'));
    expect((await checkRunStart(spec(dir))).spec.workspace).toBe(dir);
    const fresh = path.join(dir, 'not', 'yet');
    expect((await checkRunStart(spec(fresh))).spec.workspace).toBe(fresh);
    expect((await checkRunStart(spec('relative/ws'))).spec.workspace).toBe(path.resolve('relative/ws'));
  });
});

describe('a worker given a workspace that is not a directory', () => {
  it('fails the call at once with what is wrong, not after retries', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-ws-worker-'));
    const file = path.join(dir, 'file');
    await writeFile(file, 'x');
    const deps = { workspaceRoot: dir } as ActivityDeps;
    for (const workspace of [file, path.join(file, 'below')]) {
      await expect(workspaceFor(deps, 'run-1', workspace)).rejects.toMatchObject({
        type: 'WorkspaceNotADirectory',
        nonRetryable: true,
        message: `the workspace ${workspace} is not a directory`,
      });
    }
  });
});
