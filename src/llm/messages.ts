import { jsonSchema, type LanguageModelMiddleware, MissingToolResultsError, tool, type ToolSet } from 'ai';
import type { ToolName } from '../api/spec.js';
import type { TranscriptMessage } from '../api/types.js';
import { toolJsonSchemas } from '../api/tools.js';

/** The prompt a provider's model receives (the AI SDK's provider-level message format). */
export type ModelPrompt = Parameters<NonNullable<LanguageModelMiddleware['transformParams']>>[0]['params']['prompt'];
type PromptMessage = ModelPrompt[number];

/**
 * Turns the system prompt and the transcript into the prompt the provider's
 * model receives, as the AI SDK's own conversion would: consecutive tool
 * results in one message, no empty text parts, and a tool call without its
 * result refused. Built here because the SDK's `streamText` validates every
 * message of its `messages` against its zod schemas on every call, which cost
 * ~0.5 ms a message (most of a model call's work in a long run:
 * bench/profile-model-call.ts).
 */
export function toModelPrompt(system: string | undefined, transcript: TranscriptMessage[]): ModelPrompt {
  const prompt: PromptMessage[] = system ? [{ role: 'system', content: system }] : [];
  const open = new Set<string>();
  for (const message of transcript) {
    const converted = toPromptMessage(message);
    const last = prompt.at(-1);
    if (converted.role === 'tool' && last?.role === 'tool') last.content.push(...converted.content);
    else prompt.push(converted);
    if (converted.role === 'assistant') for (const part of converted.content) if (part.type === 'tool-call') open.add(part.toolCallId);
    if (converted.role === 'tool') for (const part of converted.content) if (part.type === 'tool-result') open.delete(part.toolCallId);
    if ((converted.role === 'user' || converted.role === 'system') && open.size > 0) throw new MissingToolResultsError({ toolCallIds: [...open] });
  }
  if (open.size > 0) throw new MissingToolResultsError({ toolCallIds: [...open] });
  return prompt;
}

function toPromptMessage(message: TranscriptMessage): PromptMessage {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: message.content }] };
    case 'assistant':
      return {
        role: 'assistant',
        content: [
          ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
          ...(message.toolCalls ?? []).map((call) => ({ type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: call.args ?? {} })),
        ],
      };
    default:
      return {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: message.toolCallId, toolName: message.toolName, output: { type: 'text', value: message.content } }],
      };
  }
}

/**
 * The tools offered to the model, declared without `execute` so the SDK only
 * reports the calls: Tether runs them as activities, or in the workflow.
 * Arguments are validated by Tether, so garbage becomes a tool result the model
 * can read rather than an SDK exception.
 */
export function toolSet(names: ToolName[]): ToolSet {
  const schemas = toolJsonSchemas(names);
  return Object.fromEntries(
    Object.entries(schemas).map(([name, { description, parameters }]) => [
      name,
      tool({ description, inputSchema: jsonSchema(parameters as Parameters<typeof jsonSchema>[0]) }),
    ]),
  );
}
