import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlmActivities, type LlmCallInput, type LlmReply } from '../../src/activities/llm.js';
import type { TokenStream } from '../../src/activities/deps.js';
import { PriceTable } from '../../src/llm/pricing.js';
import { TranscriptCache } from '../../src/llm/transcript-cache.js';
import { startScriptedServer, type ScriptedServer } from '../../src/scripted/server.js';
import type { Script } from '../../src/scripted/script.js';

const TEXT = 'a reply that streams';
const scripts: Record<string, Script> = {
  quick: { steps: [{ reply: { text: TEXT } }] } as Script,
  slow: { steps: [{ reply: { text: TEXT }, faults: [{ kind: 'trickle', ms: 1_500, times: 1 }] }] } as Script,
};

/** Every heartbeat a model call sends (each one a write on the server), and when, from the call's start. */
async function heartbeatsOf(scripted: ScriptedServer, model: string): Promise<Array<{ atMs: number; details: { stream?: { url: string; step: number } } }>> {
  const tokens: TokenStream = { url: 'http://127.0.0.1:1/tokens/capability', push() {}, close() {} };
  const activities = createLlmActivities({
    env: {},
    workspaceRoot: '/nonexistent',
    scriptedUrl: async () => scripted.url,
    prices: new PriceTable(),
    transcripts: new TranscriptCache(),
    logger: pino({ level: 'silent' }),
    tokenStreams: async () => tokens,
  });
  const input: LlmCallInput = {
    runId: `beats-${model}-${Date.now()}`,
    step: 0,
    model: `scripted:${model}`,
    context: { epoch: 0, from: 0, messages: [{ role: 'user', content: 'go' }], length: 1 },
    tools: [],
    timeoutMs: 30_000,
  };
  const env = new MockActivityEnvironment();
  const beats: Array<{ atMs: number; details: { stream?: { url: string; step: number } } }> = [];
  const started = Date.now();
  env.on('heartbeat', (details) => beats.push({ atMs: Date.now() - started, details }));
  const reply = (await env.run(activities.callModel, input)) as LlmReply;
  expect(reply.text).toBe(TEXT);
  return beats;
}

describe("a model call's heartbeats", () => {
  let scripted: ScriptedServer;
  beforeAll(async () => {
    scripted = await startScriptedServer({ port: 0, scripts });
  });
  afterAll(async () => scripted?.close());

  it('are none for a call that ends sooner than a follower looks for its tokens', async () => {
    expect(await heartbeatsOf(scripted, 'quick')).toEqual([]);
  });

  it('announce a longer call’s token stream a quarter second in, and keep beating while it streams', async () => {
    const beats = await heartbeatsOf(scripted, 'slow');
    expect(beats[0].details.stream).toEqual({ url: 'http://127.0.0.1:1/tokens/capability', step: 1 });
    expect(beats[0].atMs).toBeGreaterThanOrEqual(250);
    expect(beats.length).toBeGreaterThanOrEqual(3);
  });
});
