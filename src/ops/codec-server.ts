/**
 * A codec server for the Temporal UI and CLI (Temporal's codec-server
 * protocol: `POST …/encode` and `POST …/decode`, body `{ payloads }` in
 * protobuf JSON, bytes as base64). It decrypts on request, so it is locked
 * twice: browsers may call it only from the UI's origin (CORS), and every
 * call must carry the token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { codecFromEnv } from './codec.js';
import { listen } from './listen.js';

export interface CodecServerOptions {
  port: number;
  host?: string;
  /** The Temporal UI's origin(s), e.g. `http://localhost:8233`; browsers from elsewhere are refused. */
  uiOrigin: string | string[];
  /** Shared secret, sent as `Authorization: Bearer <token>` or as the endpoint's first path segment. */
  token: string;
  codec: PayloadCodec;
}

/** A payload as protobuf JSON writes it: metadata values and data are base64. */
interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

// Generous: the UI sends a whole history page when it downloads one.
const MAX_BODY_BYTES = 64 * 1024 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function fromJson({ metadata, data }: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: data ? Buffer.from(data, 'base64') : undefined,
  };
}

function toJson({ metadata, data }: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    data: data ? Buffer.from(data).toString('base64') : undefined,
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parsePayloads(body: string): Payload[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new HttpError(400, 'body is not JSON');
  }
  const payloads = (parsed as { payloads?: unknown })?.payloads;
  if (!Array.isArray(payloads)) throw new HttpError(400, 'body must be {"payloads": [...]}');
  return payloads.map((p) => fromJson(p as JsonPayload));
}

/** Compares digests so neither the token's length nor its prefix leaks through timing. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Splits `/[<token>/]…/encode|decode` into the operation and an optional path
 * token. The protocol looks only at the last segment, so a deployment may
 * mount the endpoint at any depth.
 */
function route(pathname: string): { op: 'encode' | 'decode' | null; pathToken: string | null } {
  const segments = pathname.split('/').filter(Boolean);
  const last = segments.at(-1);
  const op = last === 'encode' || last === 'decode' ? last : null;
  let pathToken: string | null = null;
  try {
    if (segments.length > 1) pathToken = decodeURIComponent(segments[0]);
  } catch {
    // A malformed escape is simply not a token.
  }
  return { op, pathToken };
}

function authorized(req: IncomingMessage, pathToken: string | null, token: string): boolean {
  const header = req.headers.authorization ?? '';
  const bearer = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
  return (bearer !== undefined && sameSecret(bearer, token)) || (pathToken !== null && sameSecret(pathToken, token));
}

function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-allow-credentials': 'true',
    'access-control-allow-headers': 'content-type,authorization,x-namespace',
    'access-control-allow-methods': 'POST,OPTIONS',
    'access-control-max-age': '600',
    vary: 'Origin',
  };
}

async function handle(opts: CodecServerOptions, origins: Set<string>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const origin = req.headers.origin;
  // A browser on another origin gets no CORS headers (so it cannot read anything) and a 403.
  if (origin !== undefined && !origins.has(origin)) {
    res.writeHead(403, { 'content-type': 'text/plain' }).end(`origin ${origin} is not allowed\n`);
    return;
  }
  const cors = origin ? corsHeaders(origin) : {};
  const send = (status: number, body: string, type = 'text/plain') => res.writeHead(status, { ...cors, 'content-type': type }).end(body);
  if (req.method === 'OPTIONS') {
    // Browsers send preflights without credentials, so the token cannot be checked here.
    res.writeHead(204, cors).end();
    return;
  }
  const { op, pathToken } = route(new URL(req.url ?? '/', 'http://localhost').pathname);
  if (!op) return void send(404, 'not found: POST /encode or /decode\n');
  if (req.method !== 'POST') return void send(405, 'use POST\n');
  if (!authorized(req, pathToken, opts.token)) return void send(401, 'missing or wrong token: send Authorization: Bearer <TETHER_CODEC_TOKEN>\n');
  try {
    const payloads = parsePayloads(await readBody(req));
    const result = op === 'encode' ? await opts.codec.encode(payloads) : await opts.codec.decode(payloads);
    send(200, JSON.stringify({ payloads: result.map(toJson) }), 'application/json');
  } catch (err) {
    if (err instanceof HttpError) return void send(err.status, `${err.message}\n`);
    // Codec errors (unknown key id, tampered payload) name the key id, never key material.
    send(400, `${(err as Error).message}\n`);
  }
}

/** Starts the codec server; `close()` stops it. */
export async function startCodecServer(opts: CodecServerOptions): Promise<{ url: string; port: number; close(): Promise<void> }> {
  if (!opts.token) throw new Error('the codec server needs a token: set TETHER_CODEC_TOKEN (e.g. `openssl rand -hex 24`)');
  const origins = new Set((Array.isArray(opts.uiOrigin) ? opts.uiOrigin : [opts.uiOrigin]).map((o) => new URL(o).origin));
  const host = opts.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    handle(opts, origins, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  return listen(server, opts.port, host);
}

/**
 * For `tether server` and `tether dev`: when a key is set, a codec server for
 * the local UI on `uiPort`, and the endpoint to give the UI
 * (`--ui-codec-endpoint`). The dev UI has no login and cannot send headers, so
 * the token rides in the endpoint's path. Null when no key is set.
 */
export async function startLocalCodecServer(
  env: NodeJS.ProcessEnv,
  opts: { uiPort: number; port?: number },
): Promise<{ endpoint: string; close(): Promise<void> } | null> {
  const codec = codecFromEnv(env);
  if (!codec) return null;
  const token = env.TETHER_CODEC_TOKEN || randomBytes(24).toString('hex');
  const uiOrigin = [`http://localhost:${opts.uiPort}`, `http://127.0.0.1:${opts.uiPort}`];
  const server = await startCodecServer({ port: opts.port ?? 0, uiOrigin, token, codec });
  return { endpoint: `${server.url}/${encodeURIComponent(token)}`, close: server.close };
}
