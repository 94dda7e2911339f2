import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const LOADER = fileURLToPath(new URL('../../bin/code-cache.js', import.meta.url));

/** Loads `file` through the CLI's code-cache loader in a fresh node, as bin/tether.js does, and returns what it printed. */
function load(file: string, kind: string): string {
  const script = `import { requireWithCodeCache } from ${JSON.stringify(LOADER)};
const { answer } = requireWithCodeCache(${JSON.stringify(file)}, ${JSON.stringify(`${file}.cache`)}, ${JSON.stringify(kind)});
console.log(answer());`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).trim();
}

const kinds = (file: string) => JSON.parse(readFileSync(`${file}.cache.kinds`, 'utf8'));

describe('the CLI bundle loads through a code cache', () => {
  function bundle(): string {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tether-code-cache-')), 'main.cjs');
    writeFileSync(file, "const path = require('node:path');\nexports.answer = () => path.basename(__filename) + ' 42';\n");
    return file;
  }

  it('writes the cache on the first run and adds each new kind of run to it', () => {
    const file = bundle();
    expect(load(file, 'list')).toBe('main.cjs 42');
    expect(statSync(`${file}.cache`).size).toBeGreaterThan(0);
    expect(kinds(file)).toEqual(['list']);
    expect(load(file, 'list')).toBe('main.cjs 42');
    expect(kinds(file)).toEqual(['list']);
    expect(load(file, 'status')).toBe('main.cjs 42');
    expect(kinds(file)).toEqual(['list', 'status']);
  });

  it('runs from the source and writes a new cache when the cache is damaged or its list unreadable', () => {
    const file = bundle();
    load(file, 'list');
    writeFileSync(`${file}.cache`, 'not bytecode');
    expect(load(file, 'status')).toBe('main.cjs 42');
    expect(kinds(file)).toEqual(['status']);
    expect(readFileSync(`${file}.cache`, 'utf8')).not.toBe('not bytecode');
    writeFileSync(`${file}.cache.kinds`, '{oops');
    expect(load(file, 'list')).toBe('main.cjs 42');
    expect(kinds(file)).toEqual(['list']);
  });

  it('rejects a cache written for other source', () => {
    const file = bundle();
    load(file, 'list');
    writeFileSync(file, 'exports.answer = () => "changed";\n');
    expect(load(file, 'list')).toBe('changed');
    expect(kinds(file)).toEqual(['list']);
  });
});
