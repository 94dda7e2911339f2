import { z } from 'zod';
import type { Decision, Progress } from '../run/critic-watch.js';

const answerSchema = z.object({
  action: z.enum(['nudge', 'extend', 'kill', 'none']),
  message: z.string().max(4_000).optional(),
  extendBySeconds: z
    .number()
    .positive()
    .max(30 * 86_400)
    .optional(),
  raiseStepsBy: z.number().int().positive().max(1_000_000).optional(),
  reason: z.string().max(2_000).optional(),
});

/** The question the `llm` critic policy puts to a model. */
export function criticPrompt(goal: string, progress: Progress, softTimeoutMs: number, recent: string[]): string {
  return [
    'You supervise an autonomous agent run that has stopped making progress.',
    `Goal: ${goal}`,
    `It has been idle for ${Math.round(progress.idleMs / 1000)}s (soft timeout ${Math.round(softTimeoutMs / 1000)}s), after ${progress.step} steps; last tool: ${progress.lastTool ?? 'none'}.`,
    recent.length ? `Last transcript lines:\n${recent.join('\n')}` : '',
    'Decide one action and answer with JSON only:',
    '{"action": "nudge"|"extend"|"kill"|"none", "message"?: string (for nudge), "extendBySeconds"?: number, "raiseStepsBy"?: number, "reason"?: string (for kill)}',
  ]
    .filter(Boolean)
    .join('\n');
}

/** Reads a model's answer (JSON, possibly fenced or surrounded by prose); null when it is not a valid decision. */
export function parseCriticAnswer(text: string): Decision | null {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text)?.[1];
  const candidate = fenced ?? text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
  let json: unknown;
  try {
    json = JSON.parse(candidate);
  } catch {
    return null;
  }
  const parsed = answerSchema.safeParse(json);
  if (!parsed.success) return null;
  const a = parsed.data;
  switch (a.action) {
    case 'nudge':
      return a.message ? { nudge: a.message } : null;
    case 'extend':
      return { extendBy: (a.extendBySeconds ?? 0) * 1000 || undefined, raiseStepsBy: a.raiseStepsBy };
    case 'kill':
      return { kill: true, killReason: a.reason ?? 'killed by the llm critic' };
    case 'none':
      return {};
  }
}
