import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { HttpError } from './api.js';

const DIR = fileURLToPath(new URL('./assets/', import.meta.url));
const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

/** Serves the page's few static files; nothing else on disk is reachable. */
export async function serveAsset(pathname: string, res: ServerResponse): Promise<void> {
  const asset = FILES[pathname];
  if (!asset) throw new HttpError(404, 'not found');
  res.writeHead(200, { 'content-type': asset.type }).end(await readFile(DIR + asset.file));
}
