import { APICallError } from 'ai';
import type { LlmErrorKind } from './retry-policy.js';

/** An LLM failure sorted into its retry class. */
export interface ClassifiedError {
  kind: LlmErrorKind;
  message: string;
  status?: number;
  retryAfterMs?: number;
}

const OVERFLOW = /context[_ ]length[_ ]exceeded|maximum context length|prompt is too long|context window|too many tokens/i;
const MALFORMED_ERRORS = new Set([
  'AI_JSONParseError',
  'AI_TypeValidationError',
  'AI_InvalidResponseDataError',
  'AI_EmptyResponseBodyError',
  'AI_NoContentGeneratedError',
  'AI_NoOutputGeneratedError',
]);

/** Sorts any error thrown by an AI SDK call into a retry class. */
export function classifyLlmError(error: unknown): ClassifiedError {
  const err = unwrap(error);
  const message = errorMessage(err);
  if (APICallError.isInstance(err)) {
    const status = err.statusCode;
    // A 200 whose body would not parse is the provider's garbage, not our bad request.
    const causeName = (err.cause as { name?: string } | undefined)?.name ?? '';
    if (MALFORMED_ERRORS.has(causeName) || (status !== undefined && status < 300)) return { kind: 'malformed', message, status };
    if (status === undefined) return { kind: 'network', message };
    const body = `${err.responseBody ?? ''} ${message}`;
    if (status === 429) return { kind: 'rate_limit', message, status, retryAfterMs: retryAfterMs(err.responseHeaders) };
    if (status === 408 || status >= 500) return { kind: 'server', message, status, retryAfterMs: retryAfterMs(err.responseHeaders) };
    if (OVERFLOW.test(body)) return { kind: 'context_overflow', message, status };
    if (status === 401 || status === 403) return { kind: 'auth', message, status };
    return { kind: 'bad_request', message, status };
  }
  const name = (err as { name?: string })?.name ?? '';
  if (MALFORMED_ERRORS.has(name) || err instanceof SyntaxError) return { kind: 'malformed', message };
  if (name === 'TimeoutError' || name === 'LlmTimeoutError') return { kind: 'timeout', message };
  if (OVERFLOW.test(message)) return { kind: 'context_overflow', message };
  // Fetch failures (reset, refused, DNS) reach us as TypeErrors with a cause.
  return { kind: 'network', message };
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

function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    const causeText = cause instanceof Error ? `: ${cause.message}` : '';
    return `${err.message}${causeText}`.slice(0, 2_000);
  }
  return String(err).slice(0, 2_000);
}
