import { jsonSchema, tool, type ModelMessage, type ToolSet } from 'ai';
import type { ToolName } from '../api/spec.js';
import type { TranscriptMessage } from '../api/types.js';
import { toolJsonSchemas } from '../api/tools.js';

/** Turns Tether's transcript into AI SDK messages. */
export function toModelMessages(transcript: TranscriptMessage[]): ModelMessage[] {
  return transcript.map((message): ModelMessage => {
    switch (message.role) {
      case 'system':
        return { role: 'system', content: message.content };
      case 'user':
        return { role: 'user', content: message.content };
      case 'assistant':
        return {
          role: 'assistant',
          content: [
            ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
            ...(message.toolCalls ?? []).map((call) => ({
              type: 'tool-call' as const,
              toolCallId: call.id,
              toolName: call.name,
              input: call.args ?? {},
            })),
          ],
        };
      default:
        return {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: message.toolCallId, toolName: message.toolName, output: { type: 'text', value: message.content } }],
        };
    }
  });
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
