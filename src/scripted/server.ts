/**
 * The scripted model server: an OpenAI Chat Completions endpoint over real
 * HTTP that replays scripts (see script.ts) and injects provider faults, so
 * `scripted:<script>` runs exercise the same client code, retries and error
 * classification as a real provider. The request's `model` names the script;
 * the step comes from `x-tether-step` (else the count of assistant messages)
 * and the conversation from `x-tether-run` (else a hash of the first user
 * message). Faults are consumed per attempt of a (script, run, step).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterReply, createScriptCatalog, faultFor, renderReply, ScriptError, stepAt, type LoadedScript, type RenderedReply, type Script, type ScriptFault, type ScriptReply } from './script.js';
import { completionJson, completionSse, type CompletionMeta } from './sse.js';

/** One request as the server saw it (never its headers, so no API key is kept). */
export interface RecordedRequest {
  at: number;
  /** The `x-tether-run` header; null when the client sent none. */
  runId: string | null;
  /** The step index, or -1 when the request was rejected before one could be read. */
  step: number;
  /** 1-based attempt of this (script, run, step); 0 when no script answered. */
  attempt: number;
  model: string;
  stream: boolean;
  body: any;
  fault: string | null;
}

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
const MAX_RECORDED = 10_000;
// Attempt counters of long-finished steps are dead weight in a long benchmark.
const MAX_TRACKED_STEPS = 100_000;
// A side request (e.g. a compaction summary) shares the step header of the call it serves;
// it must neither eat that step's faults nor get its tool calls.
const SIDE_REPLY: ScriptReply = { text: 'Scripted summary of run {{run}} up to step {{step}}.' };

const JSON_HEADERS = { 'content-type': 'application/json' };
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

/** Starts the scripted model server; `port: 0` (the default) picks a free port. */
export async function startScriptedServer(opts: { port?: number; host?: string; scriptsDir?: string; scripts?: Record<string, Script> } = {}): Promise<ScriptedServer> {
  const host = opts.host ?? '127.0.0.1';
  const catalog = createScriptCatalog(opts.scriptsDir ?? DEFAULT_SCRIPTS_DIR, opts.scripts ?? {});
  const requests: RecordedRequest[] = [];
  const attempts = new Map<string, number>();
  let completions = 0;

  const record = (entry: RecordedRequest) => {
    requests.push(entry);
    if (requests.length > MAX_RECORDED) requests.shift();
  };
  const nextAttempt = (key: string) => {
    const attempt = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, attempt);
    if (attempts.size > MAX_TRACKED_STEPS) attempts.delete(attempts.keys().next().value!);
    return attempt;
  };

  async function chat(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    const runHeader = header(req, 'x-tether-run');
    const body = parseJson(raw);
    const model = typeof body?.model === 'string' ? body.model : '';
    const stepHeader = header(req, 'x-tether-step');
    const step = body === undefined ? -1 : stepHeader === null ? assistantCount(body.messages) : /^\d+$/.test(stepHeader) ? Number(stepHeader) : -1;
    const base = { at: Date.now(), runId: runHeader, model, stream: body?.stream === true, body: body ?? raw, step };
    const refuse = (status: number, message: string, code: string | null) => {
      record({ ...base, attempt: 0, fault: null });
      sendError(res, status, message, 'invalid_request_error', code);
    };
    if (body === undefined) return refuse(400, 'We could not parse the JSON body of your request.', null);
    if (step < 0) return refuse(400, `x-tether-step must be a non-negative integer, got "${stepHeader}"`, null);
    let script: LoadedScript | null;
    try {
      script = catalog.get(model);
    } catch (err) {
      if (err instanceof ScriptError) return refuse(400, err.message, 'invalid_script');
      throw err;
    }
    if (!script) return refuse(404, `The model \`${model}\` does not exist: no such script.`, 'model_not_found');

    const run = runHeader ?? conversationKey(body.messages);
    const purpose = header(req, 'x-tether-purpose');
    const attempt = nextAttempt(`${model}\0${run}\0${step}\0${purpose ?? ''}`);
    const scripted = stepAt(script, step);
    const side = purpose === 'compaction' ? script.compaction : undefined;
    const fault = purpose === null ? (scripted ? faultFor(scripted.faults, attempt) : null) : side ? faultFor(side.faults, attempt) : null;
    record({ ...base, attempt, fault: fault?.kind ?? null });
    if (fault && isFailure(fault)) return inject(fault, req, res, base.stream);

    const wait = (fault?.ms ?? 0) + (purpose === null ? scripted?.delayMs ?? 0 : 0);
    if (wait > 0 && !(await pause(wait, res))) return;
    const reply = renderReply(purpose !== null ? side?.reply ?? SIDE_REPLY : scripted ? scripted.reply : afterReply(script), { step, run });
    const meta: CompletionMeta = {
      id: `chatcmpl-${++completions}`,
      created: Math.floor(Date.now() / 1000),
      model,
      callIdPrefix: `call_${run}_${step}`,
      usage: usageOf(reply, raw.length),
    };
    if (base.stream) res.writeHead(200, SSE_HEADERS).end(completionSse(reply, meta, body.stream_options?.include_usage === true));
    else res.writeHead(200, JSON_HEADERS).end(completionJson(reply, meta));
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (req.method === 'POST' && path === '/v1/chat/completions') return chat(req, res, await readBody(req));
    // Drain whatever else was sent so the connection stays usable for the next request.
    req.resume();
    if (req.method === 'GET' && path === '/health') return void res.writeHead(200, JSON_HEADERS).end('{"status":"ok"}');
    if (req.method === 'GET' && path === '/v1/models') {
      const data = catalog.list().map((id) => ({ id, object: 'model', created: 0, owned_by: 'tether-scripted' }));
      return void res.writeHead(200, JSON_HEADERS).end(JSON.stringify({ object: 'list', data }));
    }
    sendError(res, 404, `Unknown request URL: ${req.method} ${path}.`, 'invalid_request_error', 'unknown_url');
  }

  const server = createServer((req, res) => {
    route(req, res).catch((err: Error) => {
      if (res.headersSent) res.destroy();
      else sendError(res, 500, `scripted server error: ${err.message}`, 'server_error', null);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${urlHost(host)}:${port}/v1`,
    port,
    requests,
    requestsFor: (runId) => requests.filter((r) => r.runId === runId),
    reset() {
      requests.length = 0;
      attempts.clear();
    },
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

/** A fault that replaces the reply; `slow` only delays it. */
type FailureFault = ScriptFault & { kind: Exclude<ScriptFault['kind'], 'slow'> };
type ErrorFault = Exclude<FailureFault['kind'], 'hang' | 'reset' | 'malformed'>;

function isFailure(fault: ScriptFault): fault is FailureFault {
  return fault.kind !== 'slow';
}

// Bodies as OpenAI sends them, so client-side error classification sees the real thing.
const FAULT_ERRORS: Record<ErrorFault, { status: number; error: Record<string, string | null> }> = {
  '429': { status: 429, error: { message: 'Rate limit reached for requests (scripted fault). Please try again later.', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
  '500': { status: 500, error: { message: 'The server had an error while processing your request (scripted fault).', type: 'server_error', param: null, code: null } },
  '503': { status: 503, error: { message: 'The engine is currently overloaded, please try again later (scripted fault).', type: 'server_error', param: null, code: null } },
  '400': { status: 400, error: { message: 'Invalid request (scripted fault).', type: 'invalid_request_error', param: null, code: null } },
  '401': { status: 401, error: { message: 'Incorrect API key provided (scripted fault).', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
  overflow: {
    status: 400,
    error: {
      message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  },
};

/** Answers one attempt with a fault instead of the reply. */
function inject(fault: FailureFault, req: IncomingMessage, res: ServerResponse, stream: boolean): void {
  switch (fault.kind) {
    case 'hang':
      // Say nothing; the socket stays open until the client gives up, `ms` passes, or close().
      if (fault.ms !== undefined) {
        const timer = setTimeout(() => req.socket.destroy(), fault.ms);
        res.once('close', () => clearTimeout(timer));
      }
      return;
    case 'reset':
      req.socket.resetAndDestroy();
      return;
    case 'malformed':
      // A reply cut off mid-object: valid HTTP, unparseable content.
      if (stream) res.writeHead(200, SSE_HEADERS).end('data: {"id":"chatcmpl-malformed","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"\n\n');
      else res.writeHead(200, JSON_HEADERS).end('{"id":"chatcmpl-malformed","object":"chat.completion","choices":[{"index":0,"message":{"content":"');
      return;
    default: {
      const { status, error } = FAULT_ERRORS[fault.kind];
      const headers = fault.kind === '429' ? { ...JSON_HEADERS, 'retry-after': String(fault.retryAfterSec ?? 1) } : JSON_HEADERS;
      res.writeHead(status, headers).end(JSON.stringify({ error }));
    }
  }
}

function sendError(res: ServerResponse, status: number, message: string, type: string, code: string | null): void {
  res.writeHead(status, JSON_HEADERS).end(JSON.stringify({ error: { message, type, param: null, code } }));
}

/** Waits `ms`; false if the client went away meanwhile (then nothing should be written). */
function pause(ms: number, res: ServerResponse): Promise<boolean> {
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

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The parsed body, or undefined when it is not JSON. */
function parseJson(raw: string): any {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' ? value : null;
}

function assistantCount(messages: unknown): number {
  return Array.isArray(messages) ? messages.filter((m) => m?.role === 'assistant').length : 0;
}

/** Names a conversation that carries no run id by its first user message, which stays fixed as it grows. */
function conversationKey(messages: unknown): string {
  const first = Array.isArray(messages) ? messages.find((m) => m?.role === 'user') : undefined;
  const content = typeof first?.content === 'string' ? first.content : JSON.stringify(first?.content ?? '');
  return createHash('sha256').update(content).digest('hex').slice(0, 12);
}

/** The script's usage, else an estimate of about four characters a token. */
function usageOf(reply: RenderedReply, requestChars: number): CompletionMeta['usage'] {
  const replyChars = reply.text.length + reply.toolCalls.reduce((n, call) => n + call.name.length + call.arguments.length, 0);
  const prompt = reply.usage?.prompt ?? Math.max(1, Math.ceil(requestChars / 4));
  const completion = reply.usage?.completion ?? Math.max(1, Math.ceil(replyChars / 4));
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
