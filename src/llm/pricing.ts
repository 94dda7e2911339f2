import { z } from 'zod';

/** A model's list price in USD per 1M tokens; prompt tokens read from or written to the provider's cache where it prices them apart. */
export interface Price {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

/** Prompt tokens of a call that the provider served from its cache or wrote to it (both counted in its input tokens). */
export interface CachedInput {
  readTokens: number;
  writeTokens: number;
}

/**
 * Cache prices as a share of the input price, where a model lists none:
 * Anthropic's are the same for every model (reads 0.1×, writes 1.25×).
 * OpenAI's vary by model and writes cost nothing extra, so its listed models
 * carry their own `cacheRead`, and an unlisted one pays the full input price.
 */
const CACHE_SHARES: Record<string, { read: number; write: number }> = { anthropic: { read: 0.1, write: 1.25 } };

/**
 * List prices in USD per 1M tokens, keyed `provider:name` or `provider:*`.
 * Override or extend them with TETHER_PRICES (a JSON file of the same shape).
 */
export const DEFAULT_PRICES: Readonly<Record<string, Price>> = {
  'openai:gpt-4.1': { input: 2, output: 8, cacheRead: 0.5 },
  'openai:gpt-4.1-mini': { input: 0.4, output: 1.6, cacheRead: 0.1 },
  'openai:gpt-4.1-nano': { input: 0.1, output: 0.4, cacheRead: 0.025 },
  'openai:gpt-4o': { input: 2.5, output: 10, cacheRead: 1.25 },
  'openai:gpt-4o-mini': { input: 0.15, output: 0.6, cacheRead: 0.075 },
  'openai:o3': { input: 2, output: 8, cacheRead: 0.5 },
  // Listed so the prefix match does not price them as their larger namesakes.
  'openai:o3-mini': { input: 1.1, output: 4.4, cacheRead: 0.55 },
  'openai:o4-mini': { input: 1.1, output: 4.4, cacheRead: 0.275 },
  'openai:gpt-5': { input: 1.25, output: 10, cacheRead: 0.125 },
  'openai:gpt-5-mini': { input: 0.25, output: 2, cacheRead: 0.025 },
  'openai:gpt-5-nano': { input: 0.05, output: 0.4, cacheRead: 0.005 },
  'anthropic:claude-opus-4': { input: 15, output: 75 },
  'anthropic:claude-opus-4-1': { input: 15, output: 75 },
  'anthropic:claude-opus-4-5': { input: 5, output: 25 },
  'anthropic:claude-sonnet-4-5': { input: 3, output: 15 },
  'anthropic:claude-sonnet-4': { input: 3, output: 15 },
  'anthropic:claude-haiku-4-5': { input: 1, output: 5 },
  'anthropic:claude-3-5-haiku': { input: 0.8, output: 4 },
  // Local models cost nothing per token.
  'ollama:*': { input: 0, output: 0 },
  // A fixed test price, so budget tests get exact, deterministic costs.
  'scripted:*': { input: 1, output: 2 },
};

const priceSchema = z.strictObject({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cacheRead: z.number().nonnegative().optional(),
  cacheWrite: z.number().nonnegative().optional(),
});
const overridesSchema = z.record(z.string().regex(/^(openai|anthropic|ollama|scripted):\S+$/, 'keys are provider:name or provider:*'), priceSchema);

/** Validates a price-override document: `{ "provider:name": { "input": n, "output": n } }`. */
export function loadPriceOverrides(json: unknown): Record<string, Price> {
  const parsed = overridesSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  // zod reports a bad record key as "Invalid key in record"; the key's own message says what is wanted.
  const message = (issue: z.core.$ZodIssue) => (issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message);
  throw new Error(`invalid TETHER_PRICES: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${message(i)}`).join('; ')}`);
}

/**
 * What one call cost; `known: false` when the model has no price. An unpriced
 * model is counted at the table's highest input and output prices, and a
 * warning says so: counting it as free would let a budgeted run (or a
 * sub-agent it delegates to) spend without limit through a model nobody priced.
 */
export interface CallCost {
  costUsd: number;
  known: boolean;
  warning?: string;
}

/** Prices calls by model: exact name, then the longest known prefix (dated variants), then the provider's wildcard. */
export class PriceTable {
  private readonly prices: Record<string, Price>;

  constructor(overrides: Record<string, Price> = {}) {
    this.prices = { ...DEFAULT_PRICES, ...overrides };
  }

  price(model: string): Price | null {
    if (this.prices[model]) return this.prices[model];
    // The prefix must end at a '-', so `gpt-4.1-mini-2025-04-14` is gpt-4.1-mini but `o3x` is not o3.
    const prefix = Object.keys(this.prices)
      .filter((known) => !known.endsWith(':*') && model.startsWith(`${known}-`))
      .sort((a, b) => b.length - a.length)[0];
    if (prefix) return this.prices[prefix];
    const provider = model.split(':', 1)[0];
    return this.prices[`${provider}:*`] ?? null;
  }

  /** The highest input and output prices in the table (each on its own), for models it does not price. */
  conservativePrice(): Price {
    const all = Object.values(this.prices);
    return { input: Math.max(0, ...all.map((p) => p.input)), output: Math.max(0, ...all.map((p) => p.output)) };
  }

  cost(model: string, usage: { inputTokens: number; outputTokens: number }, cached?: CachedInput): CallCost {
    const known = this.price(model);
    const price = known ?? this.conservativePrice();
    // An unpriced model is counted at the highest prices: its cached tokens too, at the full input price.
    const shares = known ? CACHE_SHARES[model.split(':', 1)[0]] : undefined;
    const read = Math.min(cached?.readTokens ?? 0, usage.inputTokens);
    const written = Math.min(cached?.writeTokens ?? 0, usage.inputTokens - read);
    const readPrice = (known && price.cacheRead) ?? price.input * (shares?.read ?? 1);
    const writePrice = (known && price.cacheWrite) ?? price.input * (shares?.write ?? 1);
    const uncached = usage.inputTokens - read - written;
    const costUsd = (uncached * price.input + read * readPrice + written * writePrice + usage.outputTokens * price.output) / 1_000_000;
    if (known) return { costUsd, known: true };
    const warning = `unknown price for model ${model}: counted at the highest known price ($${price.input}/$${price.output} per 1M tokens); set its price in TETHER_PRICES`;
    return { costUsd, known: false, warning };
  }
}
