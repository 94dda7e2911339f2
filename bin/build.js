#!/usr/bin/env node
// Builds dist/: the TypeScript sources compiled by tsc (tsconfig.build.json),
// every other file under src/ (the panel's page, a .cjs module) copied beside
// them, the CLI bundled into one file (bin/bundle-cli.js), and a stamp of the
// sources so bin/tether.js can tell when the build is stale. `npm run build`;
// scripts/setup.sh runs it.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleCli } from './bundle-cli.js';
import { currentStamp } from './source-stamp.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');
const started = Date.now();
// Taken before compiling, so an edit made during the build still reads as newer than it.
const stamp = currentStamp(src);

rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
if (tsc.status !== 0) {
  process.stderr.write('build: tsc failed; dist/ is incomplete and bin/tether.js keeps running the sources\n');
  process.exit(tsc.status ?? 1);
}
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue;
  const from = path.join(entry.parentPath ?? entry.path, entry.name);
  const to = path.join(dist, path.relative(src, from));
  mkdirSync(path.dirname(to), { recursive: true });
  cpSync(from, to);
}
await bundleCli(path.join(dist, 'cli/main.js'), path.join(dist, 'cli/main.bundle.cjs'));
writeFileSync(path.join(dist, '.stamp.json'), `${JSON.stringify(stamp)}\n`);
process.stderr.write(`build: dist/ built from ${stamp.files} source files in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
