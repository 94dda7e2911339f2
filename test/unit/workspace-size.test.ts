import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { smallerThan } from '../../src/tools/workspace-size.js';

const made: string[] = [];
afterAll(() => Promise.all(made.map((d) => rm(d, { recursive: true, force: true }))));
const tree = async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-size-'));
  made.push(dir);
  return dir;
};

describe('whether a workspace is small enough for a quick baseline', () => {
  it('counts the entries of every directory, nested ones too', async () => {
    const dir = await tree();
    await mkdir(path.join(dir, 'a', 'b'), { recursive: true });
    for (const name of ['one', 'two', 'three']) await writeFile(path.join(dir, 'a', 'b', name), 'x');
    expect(await smallerThan(dir, { entries: 10, bytes: 1_000 })).toBe(true);
    expect(await smallerThan(dir, { entries: 5, bytes: 1_000 })).toBe(false);
    expect(await smallerThan(await tree(), { entries: 1, bytes: 1 })).toBe(true);
  });

  it('counts the bytes of a file as its size, so one large sparse file is not small', async () => {
    const dir = await tree();
    execFileSync('truncate', ['-s', '3G', path.join(dir, 'big.bin')]);
    expect(await smallerThan(dir, { entries: 2_000, bytes: 32 * 2 ** 20 })).toBe(false);
  });
});
