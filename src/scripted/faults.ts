import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSON_HEADERS, SSE_HEADERS } from './http.js';
import type { ScriptFault } from './script.js';

/** A fault that replaces the reply; `slow` and `trickle` only delay it. */
export type FailureFault = ScriptFault & { kind: Exclude<ScriptFault['kind'], 'slow' | 'trickle'> };
type ErrorFault = Exclude<FailureFault['kind'], 'hang' | 'reset' | 'cut' | 'malformed'>;

export function isFailure(fault: ScriptFault): fault is FailureFault {
  return fault.kind !== 'slow' && fault.kind !== 'trickle';
}

// Bodies as OpenAI sends them, so client-side error classification sees the real thing.
const FAULT_ERRORS: Record<ErrorFault, { status: number; error: Record<string, string | null> }> = {
  '429': {
    status: 429,
    error: { message: 'Rate limit reached for requests (scripted fault). Please try again later.', type: 'requests', param: null, code: 'rate_limit_exceeded' },
  },
  // The account's quota or credit is spent: a 429 that no wait cures, with no Retry-After.
  quota: {
    status: 429,
    error: {
      message: 'You exceeded your current quota, please check your plan and billing details (scripted fault).',
      type: 'insufficient_quota',
      param: null,
      code: 'insufficient_quota',
    },
  },
  '500': {
    status: 500,
    error: { message: 'The server had an error while processing your request (scripted fault).', type: 'server_error', param: null, code: null },
  },
  '503': {
    status: 503,
    error: { message: 'The engine is currently overloaded, please try again later (scripted fault).', type: 'server_error', param: null, code: null },
  },
  '400': { status: 400, error: { message: 'Invalid request (scripted fault).', type: 'invalid_request_error', param: null, code: null } },
  '401': {
    status: 401,
    error: { message: 'Incorrect API key provided (scripted fault).', type: 'invalid_request_error', param: null, code: 'invalid_api_key' },
  },
  overflow: {
    status: 400,
    error: {
      message:
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  },
};

/** Answers one attempt with a fault instead of the reply: exact bytes, a socket reset, or silence. */
export function inject(fault: FailureFault, req: IncomingMessage, res: ServerResponse, stream: boolean): void {
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
    case 'cut':
      // The connection dies while the reply is on its way: a 200, its first bytes, then the socket is destroyed.
      res.writeHead(200, stream ? SSE_HEADERS : JSON_HEADERS);
      res.write(
        stream
          ? 'data: {"id":"chatcmpl-cut","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Half"}}]}\n\n'
          : '{"id":"chatcmpl-cut","object":"chat.completion",',
      );
      setTimeout(() => req.socket.destroy(), 50);
      return;
    case 'malformed':
      // A reply cut off mid-object: valid HTTP, unparseable content.
      if (stream)
        res.writeHead(200, SSE_HEADERS).end('data: {"id":"chatcmpl-malformed","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"\n\n');
      else res.writeHead(200, JSON_HEADERS).end('{"id":"chatcmpl-malformed","object":"chat.completion","choices":[{"index":0,"message":{"content":"');
      return;
    default: {
      const { status, error } = FAULT_ERRORS[fault.kind];
      const headers = fault.kind === '429' ? { ...JSON_HEADERS, 'retry-after': String(fault.retryAfterSec ?? 1) } : JSON_HEADERS;
      res.writeHead(status, headers).end(JSON.stringify({ error: fault.message === undefined ? error : { ...error, message: fault.message } }));
    }
  }
}
