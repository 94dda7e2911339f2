import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { generateText } from 'ai';
import { MAX_REPLY_TEXT_CHARS } from '../api/payload-limits.js';
import type { TranscriptMessage } from '../api/types.js';
import { classifyLlmError } from '../llm/classify.js';
import { COMPACTION_ATTEMPTS, FAILURE_TYPES } from '../llm/retry-policy.js';
import { createModel } from '../llm/providers.js';
import type { ActivityDeps } from './deps.js';

export interface SummarizeInput {
  runId: string;
  step: number;
  model: string;
  goal: string;
  transcript: TranscriptMessage[];
  timeoutMs: number;
}

const INSTRUCTIONS =
  'Summarise the agent work below for the agent itself, so it can continue without the full log: ' +
  'what was tried, what worked, what failed and why, files touched, and what remains. Be factual and brief.';

/** Renders turns as plain text, each capped, so the summary request itself stays small. */
function render(transcript: TranscriptMessage[]): string {
  return transcript
    .map((m) => {
      const calls =
        m.role === 'assistant' && m.toolCalls?.length
          ? ` [calls: ${m.toolCalls.map((c) => `${c.name} ${JSON.stringify(c.args ?? null).slice(0, 300)}`).join('; ')}]`
          : '';
      const who = m.role === 'tool' ? `tool ${m.toolName} (${m.success ? 'ok' : 'failed'})` : m.role;
      return `${who}: ${m.content.slice(0, 2_000)}${calls}`;
    })
    .join('\n');
}

/** The compaction activity: one summarisation call. A failure leaves the run's context as it was. */
export function createCompactionActivities(deps: ActivityDeps) {
  return {
    async summarizeTranscript(input: SummarizeInput): Promise<{ text: string; costUsd: number }> {
      const ctx = Context.current();
      const ticker = setInterval(() => ctx.heartbeat(), 1_000);
      try {
        const model = await createModel(input.model, { env: deps.env, scriptedUrl: deps.scriptedUrl });
        const result = await generateText({
          model,
          system: INSTRUCTIONS,
          messages: [{ role: 'user', content: `Goal: ${input.goal}\n\nWork so far:\n${render(input.transcript)}` }],
          maxRetries: 0,
          abortSignal: AbortSignal.any([ctx.cancellationSignal, AbortSignal.timeout(input.timeoutMs)]),
          headers: input.model.startsWith('scripted:')
            ? { 'x-tether-run': input.runId, 'x-tether-step': String(input.step), 'x-tether-purpose': 'compaction' }
            : undefined,
        });
        if (!result.text.trim()) throw ApplicationFailure.create({ type: 'LlmMalformedReply', message: 'empty summary', nonRetryable: false });
        const usage = { inputTokens: result.totalUsage.inputTokens ?? 0, outputTokens: result.totalUsage.outputTokens ?? 0 };
        // The summary is this activity's result and goes into the transcript: a runaway one must still fit a payload.
        return { text: result.text.trim().slice(0, MAX_REPLY_TEXT_CHARS), costUsd: deps.prices.cost(input.model, usage).costUsd };
      } catch (err) {
        if (err instanceof ApplicationFailure || ctx.cancellationSignal.aborted) throw err;
        const classified = classifyLlmError(err);
        throw ApplicationFailure.create({
          type: FAILURE_TYPES[classified.kind],
          message: `compaction: ${classified.message}`,
          nonRetryable: ctx.info.attempt >= COMPACTION_ATTEMPTS,
        });
      } finally {
        clearInterval(ticker);
      }
    },
  };
}
