import { Context } from '@temporalio/activity';
import { generateText } from 'ai';
import { transcriptQuery } from '../api/messages.js';
import type { TranscriptMessage } from '../api/types.js';
import { criticPrompt, parseCriticAnswer } from '../critic/llm-decision.js';
import type { LlmAdvice } from '../critic/llm-escalator.js';
import { createModel } from '../llm/providers.js';
import type { Progress } from '../run/critic-watch.js';
import type { ActivityDeps } from './deps.js';
import { queryRun } from './run-query.js';

export interface CriticDecideInput {
  runId: string;
  goal: string;
  model: string;
  progress: Progress;
  softTimeoutMs: number;
}

/** The `llm` critic policy's activity: shows a model the stalled run and reads back a structured decision. */
export function createCriticActivities(deps: ActivityDeps) {
  async function recentLines(runId: string): Promise<string[]> {
    if (!deps.temporal) return [];
    try {
      const transcript: TranscriptMessage[] = await queryRun(deps, runId, transcriptQuery, 10_000);
      return transcript.slice(-8).map((m) => `${m.role === 'tool' ? `tool ${m.toolName}` : m.role}: ${m.content.slice(0, 300)}`);
    } catch {
      return [];
    }
  }

  return {
    async criticDecide(input: CriticDecideInput): Promise<LlmAdvice> {
      const ctx = Context.current();
      // A steady heartbeat lets a worker's crash during an escalation be noticed in seconds, not at the 90 s limit.
      const ticker = setInterval(() => ctx.heartbeat(), 1_000);
      const recent = await recentLines(input.runId);
      try {
        const model = await createModel(input.model, { env: deps.env, scriptedUrl: deps.scriptedUrl });
        const result = await generateText({
          model,
          prompt: criticPrompt(input.goal, input.progress, input.softTimeoutMs, recent),
          maxRetries: 0,
          abortSignal: AbortSignal.any([ctx.cancellationSignal, AbortSignal.timeout(60_000)]),
          headers: input.model.startsWith('scripted:')
            ? { 'x-tether-run': `${input.runId}.critic`, 'x-tether-step': String(ctx.info.attempt - 1 + input.progress.step) }
            : undefined,
        });
        const usage = { inputTokens: result.totalUsage.inputTokens ?? 0, outputTokens: result.totalUsage.outputTokens ?? 0 };
        const costUsd = deps.prices.cost(input.model, usage).costUsd;
        const decision = parseCriticAnswer(result.text);
        return decision ? { decision, costUsd } : { decision: null, costUsd, error: `unusable answer: ${result.text.slice(0, 200)}` };
      } catch (err) {
        if (ctx.cancellationSignal.aborted) throw err;
        return { decision: null, costUsd: 0, error: (err as Error).message.slice(0, 500) };
      } finally {
        clearInterval(ticker);
      }
    },
  };
}
