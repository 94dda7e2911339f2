/**
 * The scripted model server: an OpenAI Chat Completions endpoint over real
 * HTTP that replays scripts (see script.ts) and injects provider faults, so
 * `scripted:<script>` runs exercise the same client code, retries and error
 * classification as a real provider. The request's `model` names the script;
 * the step comes from `x-tether-step` (else the count of assistant messages)
 * and the conversation from `x-tether-run` (else a hash of the first user
 * message). Faults are consumed per attempt of a (script, run, step). It stays
 * on node:http: fault injection needs exact bytes and socket resets.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type RecordedRequest, ScriptedChat } from './chat.js';
import { JSON_HEADERS, readBody, sendError } from './http.js';
import type { Script } from './script.js';

/** A running scripted server. */
export interface ScriptedServer {
  /** Base URL including /v1, e.g. http://127.0.0.1:40123/v1. */
  url: string;
  port: number;
  /** Every request received, oldest first; only the last 10 000 are kept. */
  requests: RecordedRequest[];
  requestsFor(runId: string): RecordedRequest[];
  /** Forgets recorded requests and attempt counts, so faults fire again. */
  reset(): void;
  /** Stops listening and destroys every open socket, hanging ones included. */
  close(): Promise<void>;
}

const DEFAULT_SCRIPTS_DIR = fileURLToPath(new URL('../../scenarios/', import.meta.url));

/** Starts the scripted model server; `port: 0` (the default) picks a free port. */
export async function startScriptedServer(
  opts: { port?: number; host?: string; scriptsDir?: string; scripts?: Record<string, Script> } = {},
): Promise<ScriptedServer> {
  const host = opts.host ?? '127.0.0.1';
  const chat = new ScriptedChat(opts.scriptsDir ?? DEFAULT_SCRIPTS_DIR, opts.scripts ?? {});
  const server = createServer((req, res) => {
    route(chat, req, res).catch((err: Error) => {
      if (res.headersSent) res.destroy();
      else sendError(res, 500, `scripted server error: ${err.message}`, 'server_error', null);
    });
  });
  await listen(server, opts.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost(host)}:${port}/v1`,
    port,
    requests: chat.requests,
    requestsFor: (runId) => chat.requests.filter((r) => r.runId === runId),
    reset: () => chat.reset(),
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // server.close() alone would wait for hanging requests and idle keep-alive sockets forever.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

async function route(chat: ScriptedChat, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (req.method === 'POST' && path === '/v1/chat/completions') return chat.answer(req, res, await readBody(req));
  // Drain whatever else was sent so the connection stays usable for the next request.
  req.resume();
  if (req.method === 'GET' && path === '/health') return void res.writeHead(200, JSON_HEADERS).end('{"status":"ok"}');
  if (req.method === 'GET' && path === '/v1/models') {
    const data = chat.catalog.list().map((id) => ({ id, object: 'model', created: 0, owned_by: 'tether-scripted' }));
    return void res.writeHead(200, JSON_HEADERS).end(JSON.stringify({ object: 'list', data }));
  }
  sendError(res, 404, `Unknown request URL: ${req.method} ${path}.`, 'invalid_request_error', 'unknown_url');
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
