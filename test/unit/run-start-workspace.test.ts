import { existsSync } from 'node:fs';
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

describe("a workspace in Tether's home", () => {
  it('is refused, by the caller and by the worker, unless it is a run directory Tether makes there', async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), 'tether-ws-home-'));
    const env = { TETHER_HOME: home };
    const deps = { workspaceRoot: path.join(home, 'workspaces'), env } as unknown as ActivityDeps;
    for (const workspace of [home, path.join(home, 'workspaces'), path.join(home, 'checkpoints', 'run-1.git'), path.join(home, 'cluster', 'pg')]) {
      await expect(checkRunStart(spec(workspace), { env })).rejects.toMatchObject({ code: 'invalid', message: expect.stringMatching(/Tether's home/) });
      await expect(workspaceFor(deps, 'run-1', workspace)).rejects.toMatchObject({ type: 'WorkspaceOffLimits', nonRetryable: true });
    }
    expect(existsSync(path.join(home, 'cluster'))).toBe(false);
    for (const workspace of [path.join(home, 'workspaces', 'run-1'), path.join(home, 'demo', 'run-2'), path.dirname(home)]) {
      expect((await checkRunStart(spec(workspace), { env })).spec.workspace).toBe(workspace);
      await expect(workspaceFor(deps, 'run-1', workspace)).resolves.toBe(workspace);
    }
  });
});
