import type { IncomingMessage, ServerResponse } from 'node:http';

export const JSON_HEADERS = { 'content-type': 'application/json' };
export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

/** An error body shaped as OpenAI sends it. */
export function sendError(res: ServerResponse, status: number, message: string, type: string, code: string | null): void {
  res.writeHead(status, JSON_HEADERS).end(JSON.stringify({ error: { message, type, param: null, code } }));
}

/** Waits `ms`; false if the client went away meanwhile (then nothing should be written). */
export function pause(ms: number, res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const gone = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', gone);
      resolve(true);
    }, ms);
    res.once('close', gone);
  });
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' ? value : null;
}
