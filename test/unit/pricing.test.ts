import { describe, expect, it } from 'vitest';
import { loadPriceOverrides, PriceTable } from '../../src/llm/pricing.js';

const million = (inputTokens: number, outputTokens: number) => ({ inputTokens: inputTokens * 1_000_000, outputTokens: outputTokens * 1_000_000 });

describe('the price table', () => {
  it('prices a known model per million input and output tokens', () => {
    const prices = new PriceTable();
    expect(prices.cost('openai:gpt-4.1-mini', million(1, 1))).toEqual({ costUsd: 2, known: true });
    expect(prices.cost('anthropic:claude-sonnet-4-5', { inputTokens: 1_000, outputTokens: 500 }).costUsd).toBeCloseTo(0.0105, 10);
  });

  it("prices cached prompt tokens as the provider does: Anthropic's reads at 0.1× and writes at 1.25×, an OpenAI model's reads at its own price", () => {
    const table = new PriceTable();
    const usage = { inputTokens: 25_100, outputTokens: 0 };
    const cached = { readTokens: 20_000, writeTokens: 5_000 };
    expect(table.cost('anthropic:claude-sonnet-4-5', usage, cached).costUsd).toBeCloseTo((100 * 3 + 5_000 * 3.75 + 20_000 * 0.3) / 1e6, 12);
    expect(table.cost('openai:gpt-4.1', { inputTokens: 25_000, outputTokens: 0 }, { readTokens: 20_000, writeTokens: 0 }).costUsd).toBeCloseTo(
      (5_000 * 2 + 20_000 * 0.5) / 1e6,
      12,
    );
    // No cache price known: the full input price, never less.
    expect(table.cost('openai:gpt-3.5-turbo-1106', usage, cached).costUsd).toBe(table.cost('openai:gpt-3.5-turbo-1106', usage).costUsd);
    // A provider's count that exceeds the prompt cannot make it cheaper than nothing.
    expect(table.cost('anthropic:claude-haiku-4-5', { inputTokens: 10, outputTokens: 0 }, { readTokens: 50, writeTokens: 50 }).costUsd).toBeCloseTo(
      (10 * 0.1) / 1e6,
      12,
    );
  });

  it('prices a dated variant as the longest known prefix', () => {
    const prices = new PriceTable();
    expect(prices.price('openai:gpt-4.1-mini-2025-04-14')).toEqual({ input: 0.4, output: 1.6, cacheRead: 0.1 });
    expect(prices.price('openai:gpt-4.1-2025-04-14')).toEqual({ input: 2, output: 8, cacheRead: 0.5 });
    expect(prices.price('anthropic:claude-sonnet-4-5-20250929')).toEqual({ input: 3, output: 15 });
    expect(prices.price('anthropic:claude-3-5-haiku-latest')).toEqual({ input: 0.8, output: 4 });
  });

  it('matches a prefix only at a dash, so a different model is not priced as its namesake', () => {
    const prices = new PriceTable();
    expect(prices.price('openai:o3x')).toBeNull();
    expect(prices.price('openai:gpt-5-nano')).toEqual({ input: 0.05, output: 0.4, cacheRead: 0.005 });
  });

  it('falls back to the provider wildcard: local models are free, scripted ones have a fixed test price', () => {
    const prices = new PriceTable();
    expect(prices.cost('ollama:llama3.1', million(3, 3))).toEqual({ costUsd: 0, known: true });
    expect(prices.cost('scripted:spender', million(1, 1))).toEqual({ costUsd: 3, known: true });
  });

  it('counts an unknown model at the most expensive known price, so a budget still binds it, and says so', () => {
    // claude-opus-4 is the dearest default: $15 in, $75 out per 1M tokens.
    expect(new PriceTable().cost('openai:mystery', million(1, 1))).toEqual({
      costUsd: 90,
      known: false,
      warning: expect.stringMatching(/^unknown price for model openai:mystery: counted at the highest known price \(\$15\/\$75 per 1M tokens\)/),
    });
    expect(new PriceTable().cost('anthropic:claude-next', million(0, 1)).costUsd).toBe(75);
  });

  it('takes overrides into the conservative price of unknown models', () => {
    const prices = new PriceTable({ 'openai:gpt-9': { input: 100, output: 400 } });
    expect(prices.cost('openai:mystery', million(1, 1)).costUsd).toBe(500);
  });

  it('lets overrides add models and replace defaults, wildcards included', () => {
    const prices = new PriceTable({
      'openai:mystery': { input: 1, output: 1 },
      'openai:gpt-4o': { input: 9, output: 9 },
      'openai:*': { input: 0.5, output: 0.5 },
    });
    expect(prices.price('openai:mystery-2026')).toEqual({ input: 1, output: 1 });
    expect(prices.price('openai:gpt-4o-2024-08-06')).toEqual({ input: 9, output: 9 });
    expect(prices.price('openai:my-local-vllm')).toEqual({ input: 0.5, output: 0.5 });
  });
});

describe('price overrides', () => {
  it('accept a map of provider:name to input and output prices', () => {
    expect(loadPriceOverrides({ 'openai:x': { input: 1, output: 2 }, 'ollama:*': { input: 0, output: 0 } })).toEqual({
      'openai:x': { input: 1, output: 2 },
      'ollama:*': { input: 0, output: 0 },
    });
  });

  it('reject keys without a known provider, missing or negative prices and extra fields', () => {
    expect(() => loadPriceOverrides({ mystery: { input: 1, output: 1 } })).toThrow(/^invalid TETHER_PRICES: mystery: keys are provider:name/);
    expect(() => loadPriceOverrides({ 'openai:x': { input: 1 } })).toThrow(/openai:x\.output/);
    expect(() => loadPriceOverrides({ 'openai:x': { input: -1, output: 1 } })).toThrow(/openai:x\.input/);
    expect(() => loadPriceOverrides({ 'openai:x': { input: 1, output: 1, cached: 1 } })).toThrow(/TETHER_PRICES/);
    expect(() => loadPriceOverrides([])).toThrow(/\(root\)/);
  });
});
