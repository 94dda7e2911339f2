import { APICallError } from 'ai';
import { describe, expect, it } from 'vitest';
import { classifyLlmError } from '../../src/llm/classify.js';
import { withV1 } from '../../src/llm/providers.js';

describe('provider endpoints', () => {
  it('takes ANTHROPIC_BASE_URL and OLLAMA_BASE_URL as their own SDKs and servers name them (without /v1) and as the AI SDK does (with it)', () => {
    expect(withV1('http://127.0.0.1:11434')).toBe('http://127.0.0.1:11434/v1');
    expect(withV1('https://api.anthropic.com')).toBe('https://api.anthropic.com/v1');
    expect(withV1('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080/v1');
    expect(withV1('https://proxy.example/anthropic/v1')).toBe('https://proxy.example/anthropic/v1');
    expect(withV1('https://proxy.example/anthropic/v1/')).toBe('https://proxy.example/anthropic/v1');
  });

  it('names the URL a 404 came from, since the base URL is the usual culprit', () => {
    const notFound = new APICallError({
      message: 'Not Found',
      url: 'http://127.0.0.1:8080/messages',
      requestBodyValues: {},
      statusCode: 404,
      responseBody: 'Not Found',
    });
    expect(classifyLlmError(notFound)).toEqual({
      kind: 'bad_request',
      status: 404,
      message: "Not Found (http://127.0.0.1:8080/messages: check the provider's base URL)",
    });
  });

  it("points at the model's name when the 404 is about the model, as OpenAI's model_not_found is", () => {
    const unknownModel = new APICallError({
      message: 'The model `gpt-9` does not exist or you do not have access to it.',
      url: 'https://api.openai.com/v1/chat/completions',
      requestBodyValues: {},
      statusCode: 404,
      responseBody: '{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","code":"model_not_found"}}',
    });
    expect(classifyLlmError(unknownModel).message).toBe("The model `gpt-9` does not exist or you do not have access to it. (check the model's name)");
  });
});
