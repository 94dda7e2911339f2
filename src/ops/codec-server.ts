/**
 * A codec server for the Temporal UI and CLI (Temporal's codec-server
 * protocol: `POST …/encode` and `POST …/decode`, body `{ payloads }` in
 * protobuf JSON, bytes as base64). It decrypts on request, so it is locked
 * twice: browsers may call it only from the UI's origin (CORS), and every
 * call must carry the token.
 */
import type { Payload, PayloadCodec } from '@temporalio/common';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { HTTPException } from 'hono/http-exception';
import { generateToken, requireToken, resolveToken, tokensMatch, type ResolvedToken } from './access-token.js';
import { codecFromEnv } from './codec.js';
import { serveApp, type Listening } from './listen.js';

export interface CodecServerOptions {
  port: number;
  host?: string;
  /** The Temporal UI's origin(s), e.g. `http://localhost:8233`; browsers from elsewhere are refused. */
  uiOrigin: string | string[];
  /**
   * Shared secret, sent as `Authorization: Bearer <token>` or as the endpoint's
   * first path segment. Absent: TETHER_CODEC_TOKEN, else the one saved under TETHER_HOME.
   */
  token?: string;
  codec: PayloadCodec;
  env?: NodeJS.ProcessEnv;
}

/** A running codec server and the token it checks. */
export interface CodecServer extends Listening {
  token: ResolvedToken;
}

/** A payload as protobuf JSON writes it: metadata values and data are base64. */
interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

// Generous: the UI sends a whole history page when it downloads one.
const MAX_BODY_BYTES = 64 * 1024 * 1024;
const UNAUTHORIZED = 'missing or wrong token: send Authorization: Bearer <TETHER_CODEC_TOKEN>\n';

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

function parsePayloads(body: string): Payload[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return 'body is not JSON';
  }
  const payloads = (parsed as { payloads?: unknown })?.payloads;
  if (!Array.isArray(payloads)) return 'body must be {"payloads": [...]}';
  return payloads.map((p) => fromJson(p as JsonPayload));
}

/**
 * Splits `/[<token>/]…/encode|decode` into the operation and an optional path
 * token. The protocol looks only at the last segment, so a deployment may
 * mount the endpoint at any depth.
 */
function route(url: string): { op: 'encode' | 'decode' | null; pathToken: string | null } {
  const segments = new URL(url).pathname.split('/').filter(Boolean);
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

/** A browser on another origin gets no CORS headers (so it cannot read anything) and a 403. */
function originGuard(origins: string[]): MiddlewareHandler {
  return async (c, next) => {
    const origin = c.req.header('origin');
    if (origin !== undefined && !origins.includes(origin)) return c.text(`origin ${origin} is not allowed\n`, 403);
    await next();
  };
}

/** The token as a bearer header (hono's bearerAuth, every failure a 401) or, for a UI that cannot send headers, as the first path segment. */
function tokenCheck(token: string): MiddlewareHandler {
  const refuse = (c: Context) => c.text(UNAUTHORIZED, 401);
  const bearer = bearerAuth({
    verifyToken: (given) => tokensMatch(given, token),
    noAuthenticationHeader: { message: refuse },
    invalidAuthenticationHeader: { message: refuse },
    invalidToken: { message: refuse },
  });
  return async (c, next) => {
    if (tokensMatch(route(c.req.url).pathToken, token)) return next();
    return bearer(c, next);
  };
}

function codecApp(opts: CodecServerOptions, token: string): Hono {
  const origins = (Array.isArray(opts.uiOrigin) ? opts.uiOrigin : [opts.uiOrigin]).map((o) => new URL(o).origin);
  const app = new Hono();
  app.use(originGuard(origins));
  // Browsers send preflights without credentials, so the token cannot be checked on them.
  app.use(
    cors({
      origin: origins,
      credentials: true,
      allowHeaders: ['content-type', 'authorization', 'x-namespace'],
      allowMethods: ['POST', 'OPTIONS'],
      maxAge: 600,
    }),
  );
  app.use(async (c, next) => {
    if (!route(c.req.url).op) return c.text('not found: POST /encode or /decode\n', 404);
    if (c.req.method !== 'POST') return c.text('use POST\n', 405);
    await next();
  });
  app.use(tokenCheck(token));
  // The rest of an oversized body is not read, so the connection cannot carry another request.
  app.use(bodyLimit({ maxSize: MAX_BODY_BYTES, onError: (c) => c.text(`request body over ${MAX_BODY_BYTES} bytes\n`, 413, { connection: 'close' }) }));
  app.post('*', async (c) => {
    const payloads = parsePayloads(await c.req.text());
    if (typeof payloads === 'string') return c.text(`${payloads}\n`, 400);
    const result = route(c.req.url).op === 'encode' ? await opts.codec.encode(payloads) : await opts.codec.decode(payloads);
    return c.json({ payloads: result.map(toJson) });
  });
  // Codec errors (unknown key id, tampered payload) name the key id, never key material.
  app.onError((err, c) => (err instanceof HTTPException ? err.getResponse() : c.text(`${err.message}\n`, 400)));
  return app;
}

/** Starts the codec server; `close()` stops it. */
export async function startCodecServer(opts: CodecServerOptions): Promise<CodecServer> {
  const token: ResolvedToken =
    opts.token !== undefined
      ? { token: requireToken(opts.token, 'TETHER_CODEC_TOKEN'), source: 'env' }
      : await resolveToken('TETHER_CODEC_TOKEN', 'codec-token', opts.env);
  const listening = await serveApp(codecApp(opts, token.token), opts.port, opts.host ?? '127.0.0.1');
  return { ...listening, token };
}

/**
 * For `tether server` and `tether dev`: when a key is set, a codec server for
 * the local UI on `uiPort`, and the endpoint to give the UI
 * (`--ui-codec-endpoint`). The dev UI has no login and cannot send headers, so
 * the token rides in the endpoint's path; without TETHER_CODEC_TOKEN a fresh
 * one per start, since the endpoint is handed to the UI anew each time. Null
 * when no key is set.
 */
export async function startLocalCodecServer(
  env: NodeJS.ProcessEnv,
  opts: { uiPort: number; port?: number },
): Promise<{ endpoint: string; close(): Promise<void> } | null> {
  const codec = codecFromEnv(env);
  if (!codec) return null;
  const token = env.TETHER_CODEC_TOKEN ?? generateToken();
  const uiOrigin = [`http://localhost:${opts.uiPort}`, `http://127.0.0.1:${opts.uiPort}`];
  const server = await startCodecServer({ port: opts.port ?? 0, uiOrigin, token, codec });
  return { endpoint: `${server.url}/${encodeURIComponent(server.token.token)}`, close: server.close };
}
