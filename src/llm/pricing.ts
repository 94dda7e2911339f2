import { z } from 'zod';

export interface Price {
  /** USD per million input tokens. */
  input: number;
  /** USD per million output tokens. */
  output: number;
}

/** List prices in USD per 1M tokens. Override or extend with TETHER_PRICES (a JSON file). */
export const DEFAULT_PRICES: Record<string, Price> = {
  'openai:gpt-4.1': { input: 2, output: 8 },
  'openai:gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'openai:gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'openai:gpt-4o': { input: 2.5, output: 10 },
  'openai:gpt-4o-mini': { input: 0.15, output: 0.6 },
  'openai:o3': { input: 2, output: 8 },
  'openai:o4-mini': { input: 1.1, output: 4.4 },
  'openai:gpt-5': { input: 1.25, output: 10 },
  'openai:gpt-5-mini': { input: 0.25, output: 2 },
  'anthropic:claude-opus-4-1': { input: 15, output: 75 },
  'anthropic:claude-sonnet-4-5': { input: 3, output: 15 },
  'anthropic:claude-haiku-4-5': { input: 1, output: 5 },
  'anthropic:claude-3-5-haiku': { input: 0.8, output: 4 },
  'ollama:*': { input: 0, output: 0 },
  // A fixed test price so budgets can be tested deterministically.
  'scripted:*': { input: 1, output: 2 },
};

const priceSchema = z.strictObject({ input: z.number().min(0), output: z.number().min(0) });
const overridesSchema = z.record(z.string().regex(/^(openai|anthropic|ollama|scripted):\S+$/, 'keys are provider:name or provider:*'), priceSchema);

/** Validates a price-override document: `{ "provider:name": { "input": n, "output": n } }`. */
export function loadPriceOverrides(json: unknown): Record<string, Price> {
  const parsed = overridesSchema.safeParse(json);
  if (!parsed.success) throw new Error(`invalid TETHER_PRICES: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** Prices calls by model: exact name, then the longest known prefix (dated variants), then the provider's wildcard. */
export class PriceTable {
  private readonly prices: Record<string, Price>;

  constructor(overrides: Record<string, Price> = {}) {
    this.prices = { ...DEFAULT_PRICES, ...overrides };
  }

  price(model: string): Price | null {
    if (this.prices[model]) return this.prices[model];
    const prefix = Object.keys(this.prices)
      .filter((known) => !known.endsWith(':*') && model.startsWith(known))
      .sort((a, b) => b.length - a.length)[0];
    if (prefix) return this.prices[prefix];
    return this.prices[`${model.slice(0, model.indexOf(':'))}:*`] ?? null;
  }

  cost(model: string, usage: { inputTokens: number; outputTokens: number }): { costUsd: number; known: boolean; warning?: string } {
    const price = this.price(model);
    if (!price) return { costUsd: 0, known: false, warning: `unknown price for model ${model}: its cost is counted as $0 (set TETHER_PRICES)` };
    return { costUsd: (usage.inputTokens * price.input + usage.outputTokens * price.output) / 1_000_000, known: true };
  }
}
