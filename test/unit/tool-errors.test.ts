import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeToolError, executeTool } from '../../src/tools/execute.js';

let workspace: string;
beforeAll(async () => {
  workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), 'tether-tool-errors-')));
});
afterAll(() => rm(workspace, { recursive: true, force: true }));

const ctx = () => ({ workspace, callId: 'c1', timeoutMs: 10_000 });

describe('a failed file tool, as the model reads it', () => {
  it('names a missing file once by its code and by the path the model gave, not the worker’s directories', async () => {
    const result = await executeTool('read_file', { path: 'missing/f0.txt' }, ctx());
    expect(result.success).toBe(false);
    expect(result.error).toBe("ENOENT: no such file or directory, lstat 'missing/f0.txt'");
  });

  it('keeps paths relative for any errno failure (a file where a directory should be)', async () => {
    await writeFile(path.join(workspace, 'plain.txt'), 'x');
    const result = await executeTool('write_file', { path: 'plain.txt/inner.txt', content: 'y' }, ctx());
    expect(result.success).toBe(false);
    expect(result.error).toMatch(/^ENOTDIR: /);
    expect(result.error).toContain("'plain.txt");
    expect(result.error).not.toContain(workspace);
  });

  it('says the workspace itself as "."', () => {
    const err = Object.assign(new Error(`EACCES: permission denied, scandir '${workspace}'`), { code: 'EACCES' });
    expect(describeToolError(err, workspace)).toBe("EACCES: permission denied, scandir '.'");
  });

  it('gives an error without a code as it is', () => {
    expect(describeToolError(new Error('the directory was removed while being written'), workspace)).toBe(
      'error: the directory was removed while being written',
    );
  });
});
