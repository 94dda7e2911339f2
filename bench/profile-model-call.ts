// Where a model call's activity time goes as the transcript grows: the
// callModel activity in-process against the scripted model server, as a long
// run calls it (a delta of two messages a step), timed per 50 steps.
// `node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile-model-call.ts`
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities } from '../src/activities/index.js';
import type { LlmReply } from '../src/activities/llm.js';
import type { ToolName } from '../src/api/spec.js';
import type { TranscriptMessage } from '../src/api/types.js';
import { PriceTable } from '../src/llm/pricing.js';
import { TranscriptCache } from '../src/llm/transcript-cache.js';
import { startScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';

const STEPS = Number(process.env.PROFILE_STEPS ?? 400);
const script = { steps: [{ reply: { toolCalls: [{ name: 'read_file', args: { path: 'f/{{step}}' } }] }, repeat: STEPS }] } as Script;
const scripted = await startScriptedServer({ port: 0, scripts: { 'profile-long': script } });
const acts = createActivities({
  env: process.env,
  workspaceRoot: await mkdtemp(path.join(os.tmpdir(), 'tether-profile-')),
  scriptedUrl: async () => scripted.url,
  prices: new PriceTable(),
  transcripts: new TranscriptCache(),
  logger: pino({ level: 'silent' }),
});
const env = new MockActivityEnvironment();
const transcript: TranscriptMessage[] = [{ role: 'user', content: 'long', source: 'goal' }];
const runId = `profile-${Date.now()}`;
let window = performance.now();
for (let step = 0; step < STEPS; step++) {
  const from = Math.max(0, transcript.length - 2);
  const context = { epoch: 0, from, messages: transcript.slice(from), length: transcript.length };
  const reply: LlmReply = await env.run(acts.callModel, {
    runId,
    step,
    model: 'scripted:profile-long',
    ...(from === 0 ? { system: 'You are a bench.' } : { systemCached: true }),
    context,
    tools: ['read_file', 'finish'] as ToolName[],
    timeoutMs: 60_000,
  });
  transcript.push({ role: 'assistant', content: reply.text, toolCalls: reply.toolCalls });
  for (const call of reply.toolCalls)
    transcript.push({ role: 'tool', toolCallId: call.id, toolName: call.name, content: `contents of ${call.id}`, success: true });
  if ((step + 1) % 50 === 0) {
    const chars = JSON.stringify(transcript).length;
    process.stdout.write(`steps ${step - 48}-${step + 1}: ${((performance.now() - window) / 50).toFixed(1)} ms a call, transcript ${chars} chars\n`);
    window = performance.now();
  }
}
await scripted.close();
