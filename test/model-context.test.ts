import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { connectTether, startRun } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { TranscriptCache } from '../src/llm/transcript-cache.js';
import type { Script } from '../src/scripted/script.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { historyEvents } from './helpers/history.js';

const STEPS = 5;
const scripts: Record<string, Script> = {
  'write-five': {
    steps: [{ reply: { toolCalls: [{ name: 'write_file', args: { path: 'f{{step}}.txt', content: 'step {{step}}' } }] }, repeat: STEPS }],
    after: { toolCalls: [{ name: 'finish', args: { summary: 'wrote them' } }] },
  } as Script,
};

/** Where each model call's transcript started (`context.from`), from the inputs in the run's history. */
async function callModelFroms(h: Harness, runId: string): Promise<number[]> {
  const events = await historyEvents(h.tc.client.workflow.getHandle(runId));
  return events.flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== 'callModel') return [];
    const payload = scheduled.input?.payloads?.[0]?.data;
    return [JSON.parse(Buffer.from(payload ?? []).toString('utf8')).context.from as number];
  });
}

/** The number of messages the model was shown at each call, from what the scripted provider received. */
function messagesShown(h: Harness, runId: string): number[] {
  return h.scripted.requestsFor(runId).map((r) => (r.body as { messages?: unknown[] }).messages?.length ?? 0);
}

describe("a model call on a worker that does not hold the run's transcript", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  // A cache that keeps nothing: every call after the first misses, as after a worker restart or on another worker.
  const forgetful = () => new TranscriptCache(0);

  it('reads the transcript from the run, so the history carries only deltas and the model still sees it all', async () => {
    h = await startHarness({ scripts, worker: { deps: { transcripts: forgetful() } } });
    const runId = await h.start({ goal: 'write five files', model: 'scripted:write-five', critic: { policy: 'off' } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'wrote them' });
    const froms = await callModelFroms(h, runId);
    expect(froms).toHaveLength(STEPS + 1);
    expect(froms[0]).toBe(0);
    expect(froms.slice(1).every((from) => from > 0)).toBe(true);
    // Each step adds the model's reply and the tool's result: the prompt grows by two messages a call.
    const shown = messagesShown(h, runId);
    expect(shown).toHaveLength(STEPS + 1);
    for (let i = 1; i < shown.length; i++) expect(shown[i]).toBe(shown[i - 1] + 2);
  });

  it('reads it through the encryption codec when payloads are encrypted', async () => {
    const env = { ...process.env, TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
    h = await startHarness({ scripts, env, worker: { deps: { transcripts: forgetful() } } });
    const tc = await connectTether({ address: h.address, taskQueue: h.taskQueue, env });
    try {
      const spec = { goal: 'write five files', model: 'scripted:write-five', critic: { policy: 'off' as const } };
      const { runId } = await startRun(tc, spec, { id: `sealed-${Date.now()}`, taskQueue: h.taskQueue });
      expect(await waitForResult(tc, runId)).toMatchObject({ status: 'completed', summary: 'wrote them' });
      const inputs = (await historyEvents(tc.client.workflow.getHandle(runId))).flatMap((e) =>
        e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel' ? [e.activityTaskScheduledEventAttributes.input?.payloads?.[0]] : [],
      );
      // One call a step and no resends (each would add a call), every input sealed.
      expect(inputs).toHaveLength(STEPS + 1);
      for (const input of inputs) expect(Buffer.from(input?.metadata?.encoding ?? []).toString()).toBe('binary/encrypted');
    } finally {
      await tc.close();
    }
  });

  it('without a server to ask, has the workflow resend the transcript whole, once a call', async () => {
    h = await startHarness({ scripts, worker: { deps: { transcripts: forgetful(), temporal: undefined } } });
    const runId = await h.start({ goal: 'write five files', model: 'scripted:write-five', critic: { policy: 'off' } });
    expect(await h.result(runId)).toMatchObject({ status: 'completed', summary: 'wrote them' });
    const froms = await callModelFroms(h, runId);
    // The first call, then for each later one a delta that misses and its whole resend.
    expect(froms).toEqual([0, ...Array.from({ length: STEPS }, () => [expect.any(Number), 0]).flat()]);
    expect(froms.filter((_, i) => i % 2 === 1).every((from) => from > 0)).toBe(true);
  });
});
