import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';

const DIR = fileURLToPath(new URL('./assets/', import.meta.url));
const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/charts.js': { file: 'charts.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
};

/** The page's few static files; nothing else on disk is reachable. */
export function assetRoutes(): Hono {
  const app = new Hono();
  for (const [route, asset] of Object.entries(FILES)) {
    app.get(route, async (c) => c.body(await readFile(DIR + asset.file), 200, { 'content-type': asset.type }));
  }
  return app;
}
