import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import type { Provider } from '../api/spec.js';

/** Where a provider's settings come from: the worker's environment, never the workflow. */
export interface ProviderEnv {
  env: NodeJS.ProcessEnv;
  /** Base URL (with /v1) of the scripted model server. */
  scriptedUrl: () => Promise<string>;
}

/** A provider could not be set up (a missing key): retrying cannot help, so the failure is final. */
export class ProviderConfigError extends Error {
  override name = 'ProviderConfigError';
}

export function splitModel(ref: string): { provider: Provider; name: string } {
  const at = ref.indexOf(':');
  return { provider: ref.slice(0, at) as Provider, name: ref.slice(at + 1) };
}

/** Builds the AI SDK model for `provider:name`. Keys are read here and go nowhere else. */
export async function createModel(ref: string, { env, scriptedUrl }: ProviderEnv): Promise<LanguageModel> {
  const { provider, name } = splitModel(ref);
  switch (provider) {
    case 'openai': {
      const baseURL = env.OPENAI_BASE_URL || 'https://api.openai.com/v1';
      const apiKey = env.OPENAI_API_KEY;
      // A self-hosted OpenAI-compatible server may need no key; the public API always does.
      if (!apiKey && !env.OPENAI_BASE_URL)
        throw new ProviderConfigError(
          "OPENAI_API_KEY is not set in the worker's environment (or set OPENAI_BASE_URL there, for a compatible server): keys are the worker's settings, not the CLI's",
        );
      return compatibleModel('openai', baseURL, apiKey || 'unused', name);
    }
    case 'anthropic': {
      const apiKey = env.ANTHROPIC_API_KEY;
      if (!apiKey) throw new ProviderConfigError("ANTHROPIC_API_KEY is not set in the worker's environment: keys are the worker's settings, not the CLI's");
      const baseURL = env.ANTHROPIC_BASE_URL ? withV1(env.ANTHROPIC_BASE_URL) : undefined;
      return reused(['anthropic', baseURL ?? '', apiKey, name], () => createAnthropic({ apiKey, ...(baseURL ? { baseURL } : {}) })(name));
    }
    case 'ollama':
      // Ollama's own settings (OLLAMA_HOST) name the server, without the /v1 of its OpenAI-compatible API.
      return compatibleModel('ollama', withV1(env.OLLAMA_BASE_URL || 'http://127.0.0.1:11434'), 'ollama', name);
    case 'scripted':
      return compatibleModel('scripted', await scriptedUrl(), 'scripted', name);
    default:
      throw new ProviderConfigError(`unknown provider in model "${ref}"`);
  }
}

/**
 * A base URL as a provider's own SDKs and servers name it (`https://api.anthropic.com`,
 * `http://127.0.0.1:11434`, the API version added) or as the AI SDK does (with `/v1`):
 * either works, for ANTHROPIC_BASE_URL and OLLAMA_BASE_URL.
 */
export function withV1(value: string): string {
  const base = value.trim().replace(/\/+$/, '');
  return /\/v1$/.test(base) ? base : `${base}/v1`;
}

function compatibleModel(provider: string, baseURL: string, apiKey: string, name: string): LanguageModel {
  return reused([provider, baseURL, apiKey, name], () => createOpenAICompatible({ name: provider, baseURL, apiKey, includeUsage: true }).chatModel(name));
}

/**
 * Model instances, one per provider, endpoint, key and model name: an
 * instance holds only its settings, and building one builds the AI SDK's zod
 * schemas for its replies (~3 % of a loaded worker's main thread when built
 * per call). Keyed by everything it is built from, so a changed key or
 * endpoint gets a new instance; the key stays in this process's memory only.
 */
const models = new Map<string, LanguageModel>();
const MODELS_LIMIT = 100;

function reused(key: string[], build: () => LanguageModel): LanguageModel {
  const id = JSON.stringify(key);
  let model = models.get(id);
  if (!model) {
    if (models.size >= MODELS_LIMIT) models.delete(models.keys().next().value!);
    model = build();
    models.set(id, model);
  }
  return model;
}
