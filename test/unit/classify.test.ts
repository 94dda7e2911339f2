import { APICallError } from 'ai';
import { describe, expect, it } from 'vitest';
import { classifyLlmError, ProviderStreamError } from '../../src/llm/classify.js';
import {
  COMPACTION_ATTEMPTS,
  countsAgainstProvider,
  FATAL_FAILURE_TYPES,
  FAILURE_TYPES,
  isFinalAttempt,
  LLM_ACTIVITY_RETRY,
  type LlmErrorKind,
  RETRY_BUDGETS,
  retryDelayMs,
} from '../../src/llm/retry-policy.js';

const apiError = (statusCode: number | undefined, body = '', headers: Record<string, string> = {}, cause?: unknown) =>
  new APICallError({ message: `HTTP ${statusCode}`, url: 'http://x', requestBodyValues: {}, statusCode, responseBody: body, responseHeaders: headers, cause });
const named = (name: string, message = name) => Object.assign(new Error(message), { name });

describe('LLM error classification', () => {
  const cases: Array<[string, unknown, LlmErrorKind]> = [
    ['429', apiError(429), 'rate_limit'],
    ['500', apiError(500), 'server'],
    ['502', apiError(502), 'server'],
    ['503', apiError(503), 'server'],
    ['408 request timeout', apiError(408), 'server'],
    ['400 with context_length_exceeded', apiError(400, '{"error":{"code":"context_length_exceeded"}}'), 'context_overflow'],
    ['400 "prompt is too long"', apiError(400, '{"error":{"message":"prompt is too long: 210000 tokens"}}'), 'context_overflow'],
    ['400 without overflow', apiError(400, '{"error":{"message":"bad tool schema"}}'), 'bad_request'],
    [
      'a 400 refusing stream_options (asked whole next)',
      apiError(400, '{"error":{"message":"Unrecognized request argument supplied: stream_options"}}'),
      'malformed',
    ],
    [
      "vLLM's 400 refusing stream_options",
      apiError(400, '{"object":"error","message":"[{\'type\': \'extra_forbidden\', \'loc\': (\'body\', \'stream_options\')}]","code":400}'),
      'malformed',
    ],
    ["a gateway's 413 (the request outgrew its size limit)", apiError(413, '<html><body>413 Request Entity Too Large</body></html>'), 'context_overflow'],
    ['401', apiError(401), 'auth'],
    ['403', apiError(403), 'auth'],
    ['404', apiError(404), 'bad_request'],
    ['404 for an unknown model', apiError(404, '{"error":{"message":"The model `gpt-9` does not exist","code":"model_not_found"}}'), 'bad_request'],
    ['422', apiError(422), 'bad_request'],
    ['no status (the request never got an answer)', apiError(undefined), 'network'],
    ['a 200 whose body would not parse', apiError(200, 'garbage', {}, named('AI_JSONParseError')), 'malformed'],
    [
      'a 200 whose connection was cut while its body was read',
      apiError(200, '', {}, Object.assign(new TypeError('terminated'), { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) })),
      'network',
    ],
    ['a 200 whose body reset', apiError(200, '', {}, Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })), 'network'],
    [
      "a gateway's 200 carrying a rate limit",
      apiError(200, '{"error":{"message":"Rate limit exceeded","code":429}}', {}, named('AI_TypeValidationError')),
      'rate_limit',
    ],
    [
      "a gateway's 200 carrying a server error",
      apiError(200, '{"error":{"message":"upstream failed","code":"502"}}', {}, named('AI_TypeValidationError')),
      'server',
    ],
    ["a 200 whose error is the caller's", apiError(200, '{"error":{"message":"bad","code":400}}', {}, named('AI_TypeValidationError')), 'bad_request'],
    [
      "a gateway's 200 carrying a missing key (OpenRouter)",
      apiError(200, '{"error":{"message":"No auth credentials found","code":401}}', {}, named('AI_TypeValidationError')),
      'auth',
    ],
    [
      "a 200 carrying OpenAI's invalid_api_key",
      apiError(
        200,
        '{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}',
        {},
        named('AI_TypeValidationError'),
      ),
      'auth',
    ],
    [
      "a 200 carrying OpenAI's insufficient_quota",
      apiError(
        200,
        '{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}',
        {},
        named('AI_TypeValidationError'),
      ),
      'quota',
    ],
    ['a 200 whose error names nothing known', apiError(200, '{"error":{"message":"odd"}}', {}, named('AI_TypeValidationError')), 'malformed'],
    [
      "OpenAI's 429 for a spent quota (no wait cures it)",
      apiError(
        429,
        '{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}',
      ),
      'quota',
    ],
    [
      "Gemini's 429 for a per-minute quota (a rate limit)",
      apiError(429, '{"error":{"code":429,"message":"Quota exceeded for metric: generate_content_requests per minute","status":"RESOURCE_EXHAUSTED"}}'),
      'rate_limit',
    ],
    ['a spent quota inside a stream', new ProviderStreamError({ type: 'insufficient_quota', message: 'You exceeded your current quota' }), 'quota'],
    ['a fetch failure', new TypeError('fetch failed'), 'network'],
    ['a connection reset', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'network'],
    ['a JSON parse error', named('AI_JSONParseError', 'Unexpected end of JSON input'), 'malformed'],
    ['an empty response body', named('AI_EmptyResponseBodyError'), 'malformed'],
    ['a syntax error', new SyntaxError('Unexpected token'), 'malformed'],
    ['a timeout', named('TimeoutError', 'The operation was aborted due to timeout'), 'timeout'],
    [
      'the AI SDK refusing a transcript with a call and no result',
      named('AI_MissingToolResultsError', 'Tool result is missing for tool call call_0.'),
      'bad_request',
    ],
    ['the AI SDK refusing a prompt', named('AI_InvalidPromptError', 'Invalid prompt: messages must not be empty'), 'bad_request'],
    ['an overflow outside an HTTP error', new Error("This model's maximum context length is 128000 tokens"), 'context_overflow'],
    [
      "llama.cpp's overflow",
      apiError(400, '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}'),
      'context_overflow',
    ],
    [
      "Gemini's overflow",
      apiError(400, '{"error":{"message":"The input token count exceeds the maximum number of tokens allowed (1048576)."}}'),
      'context_overflow',
    ],
    [
      "TGI's overflow",
      apiError(422, '{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens"}'),
      'context_overflow',
    ],
    ["Anthropic's overloaded error inside a stream", new ProviderStreamError({ type: 'overloaded_error', message: 'Overloaded' }), 'server'],
    ['an OpenAI error chunk inside a stream', new ProviderStreamError({ message: 'The server had an error', type: 'server_error' }), 'server'],
    [
      'an overflow inside a stream',
      new ProviderStreamError({ type: 'invalid_request_error', message: 'prompt is too long: 300000 tokens' }),
      'context_overflow',
    ],
    ['an auth error inside a stream', new ProviderStreamError({ error: { type: 'authentication_error', message: 'invalid x-api-key' } }), 'auth'],
    [
      'the last error of an AI SDK retry loop',
      Object.assign(new Error('retries exhausted'), { name: 'AI_RetryError', lastError: apiError(429) }),
      'rate_limit',
    ],
  ];
  it("keeps what a body not shaped as OpenAI's says, and cuts a long message to stay under Temporal's failure size", () => {
    const fastApi = new APICallError({
      message: 'Unprocessable Entity',
      url: 'http://x',
      requestBodyValues: {},
      statusCode: 422,
      responseBody: '{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}',
    });
    expect(classifyLlmError(fastApi).message).toBe(
      'Unprocessable Entity: {"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}',
    );
    const noPhrase = new APICallError({
      message: '',
      url: 'http://x',
      requestBodyValues: {},
      statusCode: 422,
      responseBody: '{"detail":"model gpt-x not served here"}',
    });
    expect(classifyLlmError(noPhrase).message).toBe('{"detail":"model gpt-x not served here"}');
    const shaped = apiError(400, '{"error":{"message":"HTTP 400"}}');
    expect(classifyLlmError(shaped).message).toBe('HTTP 400');
    expect(classifyLlmError(new Error('x'.repeat(5_000))).message).toHaveLength(1_000);
  });

  it.each(cases)('sorts %s into %s', (_what, error, kind) => {
    expect(classifyLlmError(error).kind).toBe(kind);
    expect(classifyLlmError(error).message).not.toContain('[object Object]');
  });

  it("fails at once, as a bad request, a request the HTTP client will not build from the set-up, and never quotes a URL's credentials", () => {
    for (const err of [
      new TypeError('Request cannot be constructed from a URL that includes credentials: http://[redacted]@127.0.0.1:9/v1/chat/completions'),
      new TypeError('Headers.append: "Bearer sk-a\nb" is an invalid header value.'),
      new TypeError('Failed to parse URL from not a url/chat/completions'),
    ])
      expect(classifyLlmError(err)).toMatchObject({ kind: 'bad_request', message: expect.stringContaining("check the provider's base URL and key") });
    expect(classifyLlmError(new TypeError('fetch failed')).kind).toBe('network');
    const notFound = new APICallError({
      message: 'Not Found',
      url: 'http://sk-user-PLANTED@127.0.0.1:9/v1?x-api-key=sk-q-PLANTED&sig=s1g-PLANTED/chat/completions',
      requestBodyValues: {},
      statusCode: 404,
      responseBody: 'no such route',
    });
    const classed = classifyLlmError(notFound);
    expect(classed.message).toContain("http://127.0.0.1:9/v1: check the provider's base URL");
    expect(classed.message).not.toContain('PLANTED');
  });

  it('keeps the status and the Retry-After of a 429, in seconds, milliseconds or as a date', () => {
    expect(classifyLlmError(apiError(429, '', { 'retry-after': '7' }))).toMatchObject({ kind: 'rate_limit', status: 429, retryAfterMs: 7_000 });
    expect(classifyLlmError(apiError(429, '', { 'Retry-After-Ms': '250' })).retryAfterMs).toBe(250);
    const soon = new Date(Date.now() + 60_000).toUTCString();
    expect(classifyLlmError(apiError(503, '', { 'retry-after': soon })).retryAfterMs).toBeGreaterThan(50_000);
  });
});

describe('the LLM retry policy', () => {
  it('backs off exponentially with jitter, never sooner than Retry-After', () => {
    expect(retryDelayMs('server', 1, undefined, () => 1)).toBe(1_000);
    expect(retryDelayMs('server', 3, undefined, () => 1)).toBe(4_000);
    expect(retryDelayMs('server', 3, undefined, () => 0)).toBe(2_000);
    expect(retryDelayMs('server', 9, undefined, () => 1)).toBe(30_000);
    expect(retryDelayMs('rate_limit', 1, 5_000, () => 0)).toBe(5_000);
  });

  it('gives a 429 five attempts, a 5xx three, and a bad request, a missing key or an overflow exactly one', () => {
    expect([1, 2, 3, 4, 5].map((n) => isFinalAttempt('rate_limit', n))).toEqual([false, false, false, false, true]);
    expect([1, 2, 3].map((n) => isFinalAttempt('server', n))).toEqual([false, false, true]);
    for (const kind of ['bad_request', 'auth', 'context_overflow'] as const) expect(isFinalAttempt(kind, 1)).toBe(true);
  });

  it("bounds the activity's Temporal retries by the largest budget, so no class is cut short", () => {
    for (const budget of Object.values(RETRY_BUDGETS)) {
      expect(LLM_ACTIVITY_RETRY.maximumAttempts).toBeGreaterThanOrEqual(budget.attempts);
      expect(LLM_ACTIVITY_RETRY.maximumInterval).toBeGreaterThanOrEqual(budget.maxMs);
    }
    expect(LLM_ACTIVITY_RETRY.maximumAttempts).toBeGreaterThanOrEqual(COMPACTION_ATTEMPTS);
    expect(LLM_ACTIVITY_RETRY).toEqual({ initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 60_000, maximumAttempts: 5 });
  });

  it("quotes a 200's error body in the provider's own words, not the SDK's schema complaint", () => {
    const err = apiError(200, '{"error":{"message":"No auth credentials found","code":401}}', {}, named('AI_TypeValidationError', 'Type validation failed: …'));
    expect(classifyLlmError(err)).toEqual({ kind: 'auth', status: 401, message: 'No auth credentials found' });
  });

  it('ends the run on a bad request, a missing key or a spent quota, and counts none against the provider', () => {
    expect(FATAL_FAILURE_TYPES).toEqual([FAILURE_TYPES.bad_request, FAILURE_TYPES.auth, FAILURE_TYPES.quota]);
    expect(countsAgainstProvider('bad_request')).toBe(false);
    expect(countsAgainstProvider('auth')).toBe(false);
    expect(countsAgainstProvider('quota')).toBe(false);
    expect(RETRY_BUDGETS.quota.attempts).toBe(1);
    expect(countsAgainstProvider('context_overflow')).toBe(false);
    for (const kind of ['rate_limit', 'server', 'network', 'timeout', 'malformed'] as const) expect(countsAgainstProvider(kind)).toBe(true);
  });
});
