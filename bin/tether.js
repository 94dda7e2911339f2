#!/usr/bin/env node
// Runs the compiled CLI from dist/ (built by `npm run build`, which
// scripts/setup.sh runs): its one-file bundle, from V8's code cache. When the
// sources are newer than the build, or it was never built, it runs the
// TypeScript sources through tsx instead, which is slower, and says so on
// stderr: never a stale CLI.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireWithCodeCache } from './code-cache.js';
import { staleness } from './source-stamp.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const stale = process.env.TETHER_FROM_SOURCE ? 'TETHER_FROM_SOURCE is set' : staleness(path.join(root, 'src'), path.join(root, 'dist', '.stamp.json'));
if (stale === null) {
  const verb = process.argv.slice(2).find((arg) => !arg.startsWith('-')) ?? '';
  const { main } = requireWithCodeCache(path.join(root, 'dist/cli/main.bundle.cjs'), path.join(root, 'dist/cli/main.bundle.cache'), verb);
  await main(process.argv);
} else {
  if (!process.env.TETHER_FROM_SOURCE) process.stderr.write(`tether: ${stale}; running the sources through tsx (slower). Rebuild with: npm run build\n`);
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('../src/cli/main.ts');
  await main(process.argv);
}
