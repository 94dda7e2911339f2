import { describe, expect, it } from 'vitest';
import { BreakerRegistry, CircuitBreaker } from '../../src/llm/circuit-breaker.js';
import { classifyLlmError, retryDelayMs } from '../../src/llm/classify.js';
import { PriceTable, loadPriceOverrides } from '../../src/llm/pricing.js';
import { Budget } from '../../src/run/budget.js';
import { signatureOf, StuckDetector } from '../../src/run/stuck-detector.js';
import { APICallError } from 'ai';

function clock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('the circuit breaker', () => {
  it('opens after exactly five consecutive failures and fails fast for 10 s', () => {
    const c = clock();
    const breaker = new CircuitBreaker({ now: c.now });
    for (let i = 0; i < 4; i++) breaker.onFailure();
    expect(breaker.state).toBe('closed');
    breaker.onFailure();
    expect(breaker.state).toBe('open');
    expect(breaker.allow()).toBe(false);
    expect(breaker.retryInMs()).toBe(10_000);
    c.advance(10_000);
    expect(breaker.allow()).toBe(true);
    expect(breaker.state).toBe('half_open');
  });

  it('doubles its open window on each failed probe, up to 120 s', () => {
    const c = clock();
    const breaker = new CircuitBreaker({ now: c.now });
    breaker.trip();
    const windows: number[] = [];
    for (let i = 0; i < 6; i++) {
      c.advance(breaker.retryInMs());
      expect(breaker.allow()).toBe(true);
      breaker.onFailure();
      windows.push(breaker.retryInMs());
    }
    expect(windows).toEqual([20_000, 40_000, 80_000, 120_000, 120_000, 120_000]);
  });

  it('closes after two successes in half-open, and reset() closes at once', () => {
    const c = clock();
    const breaker = new CircuitBreaker({ now: c.now });
    breaker.trip();
    c.advance(10_000);
    breaker.allow();
    breaker.onSuccess();
    expect(breaker.state).toBe('half_open');
    breaker.onSuccess();
    expect(breaker.state).toBe('closed');
    breaker.trip();
    breaker.reset();
    expect(breaker.allow()).toBe(true);
  });

  it('keeps one breaker per provider and reports state changes', () => {
    const changes: string[] = [];
    const registry = new BreakerRegistry({}, (provider, from, to) => changes.push(`${provider}:${from}->${to}`));
    registry.get('openai').trip();
    expect(registry.get('anthropic').state).toBe('closed');
    expect(changes).toEqual(['openai:closed->open']);
    expect(registry.all().map((b) => b.state)).toEqual(['open', 'closed']);
  });
});

describe('LLM error classification', () => {
  const apiError = (statusCode: number | undefined, body = '', headers: Record<string, string> = {}) =>
    new APICallError({ message: `HTTP ${statusCode}`, url: 'http://x', requestBodyValues: {}, statusCode, responseBody: body, responseHeaders: headers });

  it('sorts errors into retry classes', () => {
    expect(classifyLlmError(apiError(429, '', { 'retry-after': '7' }))).toMatchObject({ kind: 'rate_limit', retryAfterMs: 7_000 });
    expect(classifyLlmError(apiError(503)).kind).toBe('server');
    expect(classifyLlmError(apiError(400, '{"error":{"code":"context_length_exceeded"}}')).kind).toBe('context_overflow');
    expect(classifyLlmError(apiError(401)).kind).toBe('auth');
    expect(classifyLlmError(apiError(404)).kind).toBe('bad_request');
    expect(classifyLlmError(apiError(undefined)).kind).toBe('network');
    expect(classifyLlmError(new TypeError('fetch failed')).kind).toBe('network');
  });

  it('backs off exponentially with jitter, never sooner than Retry-After', () => {
    expect(retryDelayMs('server', 1, undefined, () => 1)).toBe(1_000);
    expect(retryDelayMs('server', 3, undefined, () => 1)).toBe(4_000);
    expect(retryDelayMs('server', 3, undefined, () => 0)).toBe(2_000);
    expect(retryDelayMs('server', 9, undefined, () => 1)).toBe(30_000);
    expect(retryDelayMs('rate_limit', 1, 5_000, () => 0)).toBe(5_000);
  });
});

describe('the budget', () => {
  it('warns once at 75, 80 and 90 % and is exhausted at 100 %', () => {
    const budget = new Budget(1);
    expect(budget.add(0.7).warnings).toEqual([]);
    expect(budget.add(0.06).warnings).toEqual([expect.stringMatching(/^budget 75% used/)]);
    expect(budget.add(0.2).warnings.filter((w) => w.includes('% used'))).toHaveLength(2);
    expect(budget.exhausted).toBe(false);
    expect(budget.add(0.04)).toMatchObject({ exhausted: true });
    budget.approve(1);
    expect(budget.exhausted).toBe(false);
    expect(budget.budgetUsd).toBe(2);
    expect(budget.add(0.6).warnings).toEqual([expect.stringMatching(/^budget 75% used/), expect.stringMatching(/^budget 80% used/)]);
  });

  it('never limits a run without a budget', () => {
    const budget = new Budget(null);
    expect(budget.add(1_000)).toEqual({ warnings: [], exhausted: false });
  });
});

describe('the stuck detector', () => {
  const ok = (output: string) => ({ success: true, output });
  const fail = (output: string) => ({ success: false, output, error: 'command exited with 1' });

  it('flags the same call with the same outcome four times in a row', () => {
    const d = new StuckDetector();
    const verdicts = [1, 2, 3, 4].map(() => d.record(signatureOf('shell', { command: 'ls' }, ok('a'))));
    expect(verdicts.slice(0, 3).every((v) => !v.stuck)).toBe(true);
    expect(verdicts[3]).toMatchObject({ stuck: true, kind: 'repeat' });
  });

  it('flags an A→B→A→B ping-pong', () => {
    const d = new StuckDetector();
    let verdict = d.record(signatureOf('read_file', { path: 'a' }, ok('x')));
    for (let i = 0; i < 5; i++) verdict = d.record(i % 2 === 0 ? signatureOf('write_file', { path: 'a', content: 'y' }, ok('w')) : signatureOf('read_file', { path: 'a' }, ok('x')));
    expect(verdict).toMatchObject({ stuck: true, kind: 'ping_pong' });
    expect(verdict.stuck && verdict.pattern).toContain('read_file');
  });

  it('flags the same error again and again whatever the call', () => {
    const d = new StuckDetector();
    let verdict = d.record(signatureOf('shell', { command: 'npm test 1' }, fail('Error: cannot find module x at 12:3')));
    for (let i = 2; i <= 5; i++) verdict = d.record(signatureOf('shell', { command: `npm test ${i}` }, fail(`Error: cannot find module x at ${i}:3`)));
    expect(verdict).toMatchObject({ stuck: true, kind: 'same_error' });
  });

  it('does not flag edit-then-test with different results, or reading different files', () => {
    const d = new StuckDetector();
    const verdicts = [];
    for (let i = 0; i < 3; i++) {
      verdicts.push(d.record(signatureOf('write_file', { path: 'src.js', content: `v${i}` }, ok('wrote'))));
      verdicts.push(d.record(signatureOf('shell', { command: 'npm test' }, i < 2 ? fail(`${2 - i} failing`) : ok('all passing'))));
    }
    for (const f of ['a', 'b', 'c', 'd', 'e']) verdicts.push(d.record(signatureOf('read_file', { path: f }, ok(f))));
    expect(verdicts.every((v) => !v.stuck)).toBe(true);
  });

  it('keeps its window across a snapshot', () => {
    const d = new StuckDetector();
    for (let i = 0; i < 3; i++) d.record(signatureOf('shell', { command: 'ls' }, ok('a')));
    const restored = new StuckDetector({}, JSON.parse(JSON.stringify(d.snapshot())));
    expect(restored.record(signatureOf('shell', { command: 'ls' }, ok('a')))).toMatchObject({ stuck: true });
  });
});

describe('pricing', () => {
  it('prices exact names, dated variants and provider wildcards, and warns on unknown models', () => {
    const prices = new PriceTable();
    expect(prices.cost('openai:gpt-4.1-mini', { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toMatchObject({ costUsd: 2, known: true });
    expect(prices.price('openai:gpt-4.1-mini-2025-04-14')).toEqual(prices.price('openai:gpt-4.1-mini'));
    expect(prices.cost('ollama:llama3.1', { inputTokens: 5, outputTokens: 5 }).costUsd).toBe(0);
    expect(prices.cost('openai:mystery', { inputTokens: 5, outputTokens: 5 })).toMatchObject({ costUsd: 0, known: false, warning: expect.stringMatching(/unknown price/) });
  });

  it('takes validated overrides', () => {
    const prices = new PriceTable(loadPriceOverrides({ 'openai:mystery': { input: 1, output: 1 } }));
    expect(prices.cost('openai:mystery', { inputTokens: 1_000_000, outputTokens: 0 }).costUsd).toBe(1);
    expect(() => loadPriceOverrides({ mystery: { input: 1 } })).toThrow(/TETHER_PRICES/);
  });
});
