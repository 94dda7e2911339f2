import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusQuery, transcriptQuery } from '../src/api/messages.js';
import type { TranscriptMessage } from '../src/api/types.js';
import { startRun, type TetherClient } from '../src/client/runs.js';
import { startPanel, type Panel } from '../src/panel/server.js';
import type { Script } from '../src/scripted/script.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { eventually } from './helpers/eventually.js';
import { openEvents, type SseEvent, type SseStream } from './helpers/sse.js';

const TOKEN = 'panel-events-token-0123456789';
const call = (name: string, args: Record<string, unknown>, text = `Calling ${name}.`) => ({ reply: { text, toolCalls: [{ name, args }] } });
const scripts: Record<string, Script> = {
  sleeper: { steps: [call('shell', { command: 'sleep 300' })] } as Script,
  stepper: {
    steps: [{ ...call('write_file', { path: 'n.txt', content: 'step {{step}}' }), repeat: 6, delayMs: 150 }, call('finish', { summary: 'stepped' })],
  } as Script,
  // Long replies push the transcript over maxContextChars, so it is compacted (rewritten) mid-run.
  verbose: {
    steps: [
      { ...call('write_file', { path: 'v{{step}}.txt', content: 'v {{step}}' }, `Thinking about step {{step}}. ${'x'.repeat(900)}`), repeat: 10, delayMs: 100 },
      call('finish', { summary: 'done' }),
    ],
    compaction: { reply: { text: 'SUMMARY of the earlier steps' } },
  } as Script,
};

/** Counts the queries the panel makes, by name, and its describes (as `describe`); every call still goes to the real Temporal. */
function countingClient(tc: TetherClient): { client: TetherClient; queries: Map<string, number> } {
  const queries = new Map<string, number>();
  const workflow = tc.client.workflow;
  const getHandle = ((id: string) => {
    const handle = workflow.getHandle(id);
    const query = handle.query.bind(handle) as (def: { name: string } | string) => Promise<unknown>;
    const count = (name: string) => queries.set(name, (queries.get(name) ?? 0) + 1);
    return Object.assign(Object.create(handle), {
      query: (def: { name: string } | string) => {
        count(typeof def === 'string' ? def : def.name);
        return query(def);
      },
      describe: () => {
        count('describe');
        return handle.describe();
      },
    });
  }) as typeof workflow.getHandle;
  const client = Object.assign(Object.create(tc.client), { workflow: Object.assign(Object.create(workflow), { getHandle }) });
  return { client: { ...tc, client }, queries };
}

let h: Harness;
const panels: Panel[] = [];
const streams: SseStream[] = [];

beforeAll(async () => {
  h = await startHarness({ scripts });
});

afterAll(async () => {
  for (const s of streams) s.close();
  for (const p of panels) await p.close();
  await h?.stop();
});

async function open(panel: Panel, query = ''): Promise<SseStream> {
  const stream = await openEvents(`${panel.url}api/events${query}`, TOKEN);
  streams.push(stream);
  return stream;
}

const transcriptEvents = (s: SseStream) => s.events.filter((e) => e.event === 'transcript').map((e) => e.data);
const lastRunState = (s: SseStream) => s.events.filter((e: SseEvent) => e.event === 'run' && e.data.status).at(-1)?.data.status.state;

/** Applies transcript events as the page does. */
function replay(events: Array<{ from: number; messages: TranscriptMessage[] }>): TranscriptMessage[] {
  return events.reduce<TranscriptMessage[]>((held, delta) => [...held.slice(0, delta.from), ...delta.messages], []);
}

describe('panel event streams', () => {
  it('refuses streams beyond the limit with a 503 that says why, and accepts one again when a stream closes', async () => {
    const panel = await startPanel({ client: h.tc, port: 0, token: TOKEN, maxEventStreams: 2 });
    panels.push(panel);
    const first = await open(panel);
    await open(panel);
    const refused = await fetch(`${panel.url}api/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect((await refused.json()).error).toMatch(/too many open event streams \(the limit is 2\)/);
    first.close();
    const openStreams = async () => Number(/^tether_panel_sse_clients (\d+)/m.exec(await (await fetch(`${panel.url}metrics`)).text())?.[1]);
    await eventually('the closed stream to be released', openStreams, (open) => open === 1);
    expect((await open(panel)).status).toBe(200);
  });

  it('fetches a transcript once for many watchers of an idle run, however many polls pass', async () => {
    const runId = await h.start({ goal: 'sleep', model: 'scripted:sleeper', critic: { policy: 'off' } });
    await h.until(runId, (s) => s.lastTool === 'shell');
    const { client, queries } = countingClient(h.tc);
    const panel = await startPanel({ client, port: 0, token: TOKEN });
    panels.push(panel);
    const watchers = [await open(panel, `?run=${runId}`), await open(panel, `?run=${runId}`), await open(panel, `?run=${runId}`)];
    for (const w of watchers)
      await eventually(
        'the first transcript',
        () => transcriptEvents(w),
        (seen) => seen.length > 0,
      );
    await eventually(
      'five more polls',
      () => queries.get(statusQuery.name) ?? 0,
      (polls) => polls >= 6,
    );
    expect(queries.get(transcriptQuery.name)).toBe(1);
    for (const w of watchers) expect(transcriptEvents(w)).toHaveLength(1);
    await h.tc.client.workflow.getHandle(runId).cancel();
  });

  it('reads an ended run from what it left: no status query however many polls pass, its transcript once, and its result', async () => {
    const runId = await h.start({ goal: 'step', model: 'scripted:stepper', critic: { policy: 'off' } });
    expect((await h.result(runId)).status).toBe('completed');
    const { client, queries } = countingClient(h.tc);
    const panel = await startPanel({ client, port: 0, token: TOKEN });
    panels.push(panel);
    const watcher = await open(panel, `?run=${runId}`);
    await eventually(
      'the transcript',
      () => transcriptEvents(watcher),
      (seen) => seen.length > 0,
    );
    await eventually(
      'five more polls',
      () => queries.get('describe') ?? 0,
      (polls) => polls >= 6,
    );
    const response = await fetch(`${panel.url}api/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.status).toMatchObject({ runId, state: 'completed', step: 7 });
    expect(body.result).toMatchObject({ status: 'completed', summary: 'stepped', steps: 7 });
    expect(body.transcript).toEqual(await h.tc.client.workflow.getHandle(runId).query(transcriptQuery));
    expect(lastRunState(watcher)).toBe('completed');
    expect(queries.get(statusQuery.name)).toBeUndefined();
    expect(queries.get(transcriptQuery.name)).toBe(2);
  });

  it('answers for an ended run no worker can replay: its status and result, and why its transcript is missing', async () => {
    const queue = `nobody-polls-${Date.now()}`;
    const { runId } = await startRun({ ...h.tc, taskQueue: queue }, { goal: 'never picked up', model: 'scripted:sleeper' });
    await h.tc.client.workflow.getHandle(runId).terminate('gave up on it');
    const panel = await startPanel({ client: h.tc, port: 0, token: TOKEN });
    panels.push(panel);
    const response = await fetch(`${panel.url}api/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    const body = await response.json();
    const why =
      `transcript: run ${runId} has ended, and only a worker on its task queue "${queue}" can replay it to answer (none has polled it lately): ` +
      `start one on that queue (\`TETHER_TASK_QUEUE=${queue} tether worker\`) and ask again, or read the run with \`tether history ${runId}\``;
    expect(body).toMatchObject({ transcript: null, transcriptError: why });
    expect(body.status).toMatchObject({ runId, state: 'killed', goal: 'never picked up', cause: 'terminated: gave up on it' });
    expect(body.result).toMatchObject({ runId, status: 'killed', cause: 'terminated: gave up on it' });
    const watcher = await open(panel, `?run=${runId}`);
    const run = await eventually('the run event', () => watcher.events.find((e) => e.event === 'run')?.data);
    expect(run).toMatchObject({ status: { state: 'killed' }, transcriptError: why });
  });

  it('sends each watcher only the messages it has not seen, and the page rebuilds the whole transcript', async () => {
    const panel = await startPanel({ client: h.tc, port: 0, token: TOKEN });
    panels.push(panel);
    const runId = await h.start({ goal: 'step', model: 'scripted:stepper', critic: { policy: 'off' } });
    const watcher = await open(panel, `?run=${runId}`);
    await eventually(
      'the run to complete',
      () => lastRunState(watcher),
      (state) => state === 'completed',
    );
    const final = await h.tc.client.workflow.getHandle(runId).query(transcriptQuery);
    const deltas = await eventually(
      'the last messages',
      () => transcriptEvents(watcher),
      (seen) => seen.at(-1)?.length === final.length,
    );
    expect(deltas.length).toBeGreaterThan(1);
    for (const [i, delta] of deltas.entries()) {
      expect(delta.from).toBe(i === 0 ? 0 : deltas[i - 1].length);
      expect(delta.messages).toHaveLength(delta.length - delta.from);
    }
    expect(replay(deltas)).toEqual(final);
  });

  it('resets a watcher with the whole transcript when compaction rewrites it', async () => {
    const panel = await startPanel({ client: h.tc, port: 0, token: TOKEN });
    panels.push(panel);
    const runId = await h.start({ goal: 'talk', model: 'scripted:verbose', critic: { policy: 'off' }, limits: { maxContextChars: 6_000 } });
    const watcher = await open(panel, `?run=${runId}`);
    await eventually(
      'the run to complete',
      () => lastRunState(watcher),
      (state) => state === 'completed',
    );
    const final = await h.tc.client.workflow.getHandle(runId).query(transcriptQuery);
    const deltas = await eventually(
      'the last messages',
      () => transcriptEvents(watcher),
      (seen) => seen.at(-1)?.length === final.length,
    );
    const resets = deltas.slice(1).filter((d) => d.from === 0);
    expect(resets.length).toBeGreaterThan(0);
    expect(resets[0].epoch).toBeGreaterThan(0);
    expect(JSON.stringify(resets[0].messages)).toContain('SUMMARY of the earlier steps');
    expect(replay(deltas)).toEqual(final);
  });
});
