import { APICallError } from 'ai';
import { displayUrl } from '../api/secrets.js';
import type { LlmErrorKind } from './retry-policy.js';

/** An LLM failure sorted into its retry class. */
export interface ClassifiedError {
  kind: LlmErrorKind;
  message: string;
  status?: number;
  retryAfterMs?: number;
}

/**
 * A context overflow, as providers and local servers word it: OpenAI and vLLM
 * (`context_length_exceeded`, "maximum context length"), Anthropic ("prompt is
 * too long"), llama.cpp ("exceeds the available context size",
 * `exceed_context_size_error`), Gemini ("exceeds the maximum number of
 * tokens"), TGI ("must be <= … tokens"), Ollama and others ("context window",
 * "too many tokens").
 */
const OVERFLOW =
  /context[_ ]length[_ ]exceeded|maximum context length|prompt is too long|context window|too many tokens|exceeds? the (?:available )?context|exceed_context_size|context size|exceeds the maximum number of tokens|must be <= \d+.{0,40}tokens/i;
/**
 * A 429 that no wait cures: the account's quota or credit is spent (OpenAI's
 * `insufficient_quota`, "You exceeded your current quota"). A per-minute quota
 * (Gemini's "Quota exceeded for metric … per minute") is a rate limit, and stays one.
 */
const QUOTA_GONE = /insufficient_quota|exceeded your current quota/i;
const QUOTA_ADVICE = "the account's quota or credit is spent: retrying will not help; check the plan and billing, or use another key or model";

/** A 404 about the model, not the URL: OpenAI's `model_not_found`, Anthropic's not_found_error naming a model, Ollama's "model … not found". */
const UNKNOWN_MODEL = /model_not_found|model[^.]{0,80}(does not exist|not found)|not_found_error[^}]{0,200}model/i;

const MALFORMED_ERRORS = new Set([
  'AI_JSONParseError',
  'AI_TypeValidationError',
  'AI_InvalidResponseDataError',
  'AI_EmptyResponseBodyError',
  'AI_NoContentGeneratedError',
  'AI_NoOutputGeneratedError',
]);

/**
 * The AI SDK refusing, before any request, what Tether asked of it (a
 * transcript it cannot send, an argument out of range): our bad request, never
 * the provider's failure. Retried, it would fail the same way, and counted as
 * a network failure it would open the provider's circuit for every run.
 */
const REQUEST_REFUSED_ERRORS = new Set([
  'AI_InvalidPromptError',
  'AI_MissingToolResultsError',
  'AI_InvalidArgumentError',
  'AI_InvalidMessageRoleError',
  'AI_MessageConversionError',
  'AI_InvalidDataContentError',
  'AI_UnsupportedFunctionalityError',
]);

/**
 * A request the HTTP client (undici) will not build from Tether's set-up: a
 * base URL with credentials in it, or one that does not parse, or a key with
 * a character no header may hold.
 */
const UNBUILDABLE_REQUEST = /cannot be constructed from a URL that includes credentials|invalid header value|failed to parse URL|invalid URL/i;

/** Sorts any error thrown by an AI SDK call into a retry class. */
export function classifyLlmError(error: unknown): ClassifiedError {
  const err = unwrap(error);
  const message = errorMessage(err);
  if (APICallError.isInstance(err)) {
    const status = err.statusCode;
    // A 200 whose body would not parse is the provider's garbage, not our bad request.
    const causeName = (err.cause as { name?: string } | undefined)?.name ?? '';
    // A connection cut while the reply was read is the network's failure, not a garbled reply (which would stop streaming).
    if (status !== undefined && status < 300 && transportFailed(err.cause)) return { kind: 'network', message, status };
    const inBody = status !== undefined && status < 300 ? errorInBody(err.responseBody) : null;
    // The provider's own words, not the SDK's account of a body that failed its schema (a zod dump).
    if (inBody) {
      const said = inBody.message ?? message;
      return { ...inBody, message: inBody.kind === 'quota' ? `${said} (${QUOTA_ADVICE})`.slice(0, MESSAGE_CHARS) : said };
    }
    if (MALFORMED_ERRORS.has(causeName) || (status !== undefined && status < 300)) return { kind: 'malformed', message, status };
    if (status === undefined) return unsent(message);
    const body = `${err.responseBody ?? ''} ${message}`;
    // A server that refuses the streaming options (some vLLM and proxy builds): a reply asked whole sends none.
    if (status === 400 && /stream_options/.test(body))
      return { kind: 'malformed', message: `${message} (the server refuses stream_options: the reply is asked whole)`.slice(0, MESSAGE_CHARS), status };
    if (status === 429 && QUOTA_GONE.test(body)) return { kind: 'quota', message: `${message} (${QUOTA_ADVICE})`.slice(0, MESSAGE_CHARS), status };
    if (status === 429) return { kind: 'rate_limit', message, status, retryAfterMs: retryAfterMs(err.responseHeaders) };
    if (status === 408 || status >= 500) return { kind: 'server', message, status, retryAfterMs: retryAfterMs(err.responseHeaders) };
    // A gateway's 413 is the request outgrowing its size limit: a shorter transcript is what fits, as for an overflow.
    if (OVERFLOW.test(body) || status === 413) return { kind: 'context_overflow', message, status };
    if (status === 401 || status === 403) return { kind: 'auth', message, status };
    // A 404 is the model when the provider says so (OpenAI's model_not_found), else nearly always the endpoint: say which one was asked.
    if (status === 404 && UNKNOWN_MODEL.test(body))
      return { kind: 'bad_request', message: `${message} (check the model's name)`.slice(0, MESSAGE_CHARS), status };
    if (status === 404)
      return { kind: 'bad_request', message: `${message} (${displayUrl(err.url)}: check the provider's base URL)`.slice(0, MESSAGE_CHARS), status };
    return { kind: 'bad_request', message, status };
  }
  const name = (err as { name?: string })?.name ?? '';
  if (err instanceof ProviderStreamError) return classifyStreamError(err, message);
  if (MALFORMED_ERRORS.has(name) || err instanceof SyntaxError) return { kind: 'malformed', message };
  if (REQUEST_REFUSED_ERRORS.has(name)) return { kind: 'bad_request', message };
  if (name === 'TimeoutError' || name === 'LlmTimeoutError') return { kind: 'timeout', message };
  if (OVERFLOW.test(message)) return { kind: 'context_overflow', message };
  return unsent(message);
}

/**
 * A request that got no answer: the network's failure (reset, refused, DNS; fetch's TypeErrors with a cause), or
 * the HTTP client refusing to build it from the set-up, which every retry would meet the same way.
 */
function unsent(message: string): ClassifiedError {
  if (UNBUILDABLE_REQUEST.test(message)) return { kind: 'bad_request', message: `${message} (check the provider's base URL and key)`.slice(0, MESSAGE_CHARS) };
  return { kind: 'network', message };
}

/** Codes of a connection that failed under a request (undici's, Node's). */
const TRANSPORT_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** Whether `cause`, or a cause of it, is the connection failing (undici's "terminated" when the socket closed mid-body). */
function transportFailed(cause: unknown): boolean {
  for (
    let c = cause as { name?: string; message?: string; code?: string; cause?: unknown } | undefined, depth = 0;
    c && depth < 6;
    c = c.cause as typeof c, depth++
  ) {
    if ((c.code && TRANSPORT_CODES.has(c.code)) || (c.name === 'TypeError' && c.message === 'terminated')) return true;
  }
  return false;
}

/**
 * An error some gateways (OpenRouter and others) send with status 200: `{ "error": { "code": 401 | 429 | 5xx …,
 * "type": "…" } }`, or an OpenAI-style name (`invalid_api_key`, `insufficient_quota`). Classed as the same error
 * with its status would be, so a missing key fails at once rather than as garbage retried; null for any other body.
 */
function errorInBody(body: string | undefined): (Omit<ClassifiedError, 'message'> & { message?: string }) | null {
  if (!body?.includes('"error"')) return null;
  let error: { code?: unknown; type?: unknown; status?: unknown; message?: unknown } | undefined;
  try {
    error = (JSON.parse(body) as { error?: typeof error })?.error;
  } catch {
    return null;
  }
  if (!error || typeof error !== 'object') return null;
  const numeric = [error.code, error.status].map((v) => (typeof v === 'string' ? Number(v) : v)).find((v) => typeof v === 'number' && v >= 400 && v < 600) as
    | number
    | undefined;
  const named = [error.code, error.type].filter((v): v is string => typeof v === 'string').join(' ');
  const said = typeof error.message === 'string' && error.message.trim() ? { message: error.message.trim().slice(0, MESSAGE_CHARS) } : {};
  const classed = classedInBody(numeric, named, body);
  return classed && { ...classed, ...said };
}

/** The class of a 200's error body, from its numeric code (or status) and its code or type names. */
function classedInBody(numeric: number | undefined, named: string, body: string): Omit<ClassifiedError, 'message'> | null {
  if (QUOTA_GONE.test(named) || (numeric === 429 && QUOTA_GONE.test(body))) return { kind: 'quota', status: 429 };
  if (numeric === 429 || /rate_limit/i.test(named)) return { kind: 'rate_limit', status: 429 };
  if (typeof numeric === 'number' && (numeric >= 500 || numeric === 408)) return { kind: 'server', status: numeric };
  if (numeric === 401 || numeric === 403 || /auth|invalid_api_key|permission/i.test(named)) return { kind: 'auth', status: numeric ?? 401 };
  if (numeric === 413 || OVERFLOW.test(named)) return { kind: 'context_overflow', status: numeric ?? 400 };
  if (typeof numeric === 'number') return { kind: 'bad_request', status: numeric };
  return null;
}

function retryAfterMs(headers: Record<string, string> | undefined): number | undefined {
  if (!headers) return undefined;
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const ms = Number.parseFloat(lower['retry-after-ms'] ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = lower['retry-after'];
  if (!value) return undefined;
  const seconds = Number.parseFloat(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

function unwrap(error: unknown): unknown {
  // The AI SDK wraps the last failure of its own retry loop; ours is off, but be safe.
  const e = error as { name?: string; lastError?: unknown };
  return e?.name === 'AI_RetryError' && e.lastError ? e.lastError : error;
}

/**
 * The error's words, cut to a size whose failure (message and stack, which
 * repeats it) stays under Temporal's limit for an activity's failure: past it,
 * history shows "Failure exceeds size limit" instead.
 */
const MESSAGE_CHARS = 1_000;

function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    const causeText = cause instanceof Error ? `: ${cause.message}` : '';
    const said = [err.message.trim(), bodyText(err)].filter(Boolean).join(': ');
    return `${said}${causeText}`.slice(0, MESSAGE_CHARS);
  }
  return String(err).slice(0, MESSAGE_CHARS);
}

/**
 * What the provider's body said, when the SDK found no message in it (a body
 * not shaped as OpenAI's, such as FastAPI's `{"detail": …}` or an HTML page):
 * the SDK then gives only the status line's reason phrase, in whatever
 * wording the server chose, or nothing.
 */
function bodyText(err: Error): string {
  if (!APICallError.isInstance(err) || !err.responseBody) return '';
  if (err.message.trim() && err.responseBody.includes(err.message)) return '';
  const text = err.responseBody
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return text.slice(0, 300);
}

/**
 * An error the provider sent inside a stream that had begun well (an
 * Anthropic `overloaded_error` event, an OpenAI chunk holding `error`): the
 * SDK hands it over as the provider's own object, not an Error.
 */
export class ProviderStreamError extends Error {
  override name = 'ProviderStreamError';
  /** The provider's error type or code (`overloaded_error`, `server_error`, `rate_limit_exceeded`…), when it gave one. */
  readonly type: string;

  constructor(value: unknown) {
    const fields = value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
    const inner = fields.error && typeof fields.error === 'object' ? (fields.error as Record<string, unknown>) : fields;
    const text = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
    const type = text(inner.type) || text(inner.code);
    const said = text(inner.message) || (value instanceof Error ? value.message : '') || (typeof value === 'string' ? value : '');
    super(`the provider reported an error in its stream${type ? ` (${type})` : ''}: ${said || JSON.stringify(value)?.slice(0, 500) || 'no detail'}`);
    this.type = type;
  }
}

/** An in-stream error, sorted by what the provider called it: most are an overloaded or failing server, which a retry may cure. */
function classifyStreamError(err: ProviderStreamError, message: string): ClassifiedError {
  if (OVERFLOW.test(`${err.type} ${message}`)) return { kind: 'context_overflow', message };
  if (QUOTA_GONE.test(err.type)) return { kind: 'quota', message: `${message} (${QUOTA_ADVICE})`.slice(0, MESSAGE_CHARS) };
  if (/rate_limit|quota/i.test(err.type)) return { kind: 'rate_limit', message };
  if (/auth|permission/i.test(err.type)) return { kind: 'auth', message };
  if (/invalid_request|not_found|bad_request/i.test(err.type)) return { kind: 'bad_request', message };
  return { kind: 'server', message };
}
