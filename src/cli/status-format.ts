import type { PendingToolCall, RunStatus } from '../api/types.js';
import { age, type OutputFormat, printFields, printJson, terminalText, usd } from './output.js';

/** A run's status as label/value pairs for the terminal. */
export function statusFields(s: RunStatus): Array<[string, string]> {
  const fields: Array<[string, string]> = [
    ['run', s.runId],
    ['goal', oneLine(s.goal)],
    ['state', s.state],
    ['model', s.model],
    ['step', `${s.step} / ${s.maxSteps}`],
    ['deadline', s.deadline],
    ['errors', `${s.consecutiveErrors} / ${s.maxConsecutiveErrors} consecutive`],
    ['emergency stop', s.emergencyStop.active ? `ACTIVE since ${s.emergencyStop.since}: ${s.emergencyStop.reason}` : 'off'],
    ['cost', `${usd(s.costUsd)}${s.budgetUsd !== null ? ` of ${usd(s.budgetUsd)}` : ''}`],
    ['tokens', `${s.usage.inputTokens} in / ${s.usage.outputTokens} out`],
    ['last tool', s.lastTool ?? '-'],
    ['last activity', `${s.lastActivityAt} (${age(s.lastActivityAt)} ago)`],
  ];
  if (s.forkOf) fields.push(['fork of', `${s.forkOf.runId} at step ${s.forkOf.step}`]);
  if (s.question) fields.push(['question', s.question]);
  if (s.pendingToolCall) fields.push(['waiting call', pendingCallLine(s.pendingToolCall)]);
  if (s.waitingSubAgent) fields.push(['waiting in', `sub-agent ${s.waitingSubAgent} (answer or decide here: it is passed down)`]);
  if (s.waitingForProvider)
    fields.push(['waiting for', `a provider until ${s.waitingForProvider.until}: every circuit is open (${oneLine(s.waitingForProvider.why, 300)})`]);
  for (const r of s.retrying ?? [])
    fields.push([
      'retrying',
      `${r.activity}, attempt ${r.attempt}${r.nextAttemptAt ? ` at ${r.nextAttemptAt}` : ' running'}, after: ${oneLine(r.lastFailure, 300)}`,
    ]);
  const unwell = (s.breakers ?? []).filter((b) => b.state !== 'closed');
  if (unwell.length)
    fields.push(['circuits', unwell.map((b) => `${b.provider} ${b.state.replace('_', '-')}${b.openUntil ? ` until ${b.openUntil}` : ''}`).join('; ')]);
  if (s.critic) {
    fields.push([
      'critic',
      `${s.critic.policy}, soft timeout ${Math.round(s.critic.softTimeoutMs / 1000)}s, next escalation ${s.critic.nextEscalationAt ?? '-'}, ${s.critic.decisions.length} decision(s)`,
    ]);
  }
  if (s.warnings.length) fields.push(['warnings', s.warnings.join('; ')]);
  if (s.cause) fields.push(['cause', s.cause]);
  return fields;
}

/** A tool call waiting for approval, in full: its id, tool and arguments. */
export function pendingCallLine(call: PendingToolCall): string {
  return `${terminalText(call.callId, false)}: ${terminalText(call.tool, false)} ${JSON.stringify(call.args)} (waiting since ${call.requestedAt})`;
}

/** A run's status, as JSON or as fields. */
export function printStatus(status: RunStatus, format: OutputFormat): void {
  if (format === 'json') printJson(status);
  else printFields(statusFields(status));
}

/** The first line of a text, clipped for a table cell or a field. */
export function oneLine(text: string, max = 100): string {
  const line = text.split('\n', 1)[0]!.trim();
  return line.length > max || line !== text.trim() ? `${line.slice(0, max - 1)}…` : line;
}
