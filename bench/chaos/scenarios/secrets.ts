/**
 * Secrets: a provider key planted where a careless system would leak it — a
 * model that echoes it, a tool that prints its environment, a provider error
 * that quotes it, the key pasted into a RunSpec's system prompt — then the
 * raw database file, the worker's logs, the traces it exports, the panel's
 * API and both metrics endpoints are searched for it. Expected: 0 occurrences, and the spec with
 * the key refused before it reaches Temporal.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { getTranscript, startRun, type TetherClient, TetherError } from '../../../src/client/runs.js';
import type { Script } from '../../../src/scripted/script.js';
import { startPanel } from '../../../src/panel/server.js';
import { freePort } from '../../../src/server/free-port.js';
import type { Scenario } from '../context.js';
import { startOtlpSink } from '../otlp-sink.js';
import { resultWithin, scriptedServer } from '../stack.js';
import { describe } from './fault-storm.js';

function scripts(key: string): Record<string, Script> {
  const finish = (summary: string) => ({ toolCalls: [{ name: 'finish', args: { summary } }] });
  return {
    'secret-echo': {
      steps: [{ reply: { text: `Sure, the key is ${key}.`, toolCalls: [{ name: 'write_file', args: { path: 'note.txt', content: `key=${key}` } }] } }],
      after: { text: `Done; I used ${key}.` },
    } as Script,
    'secret-env': {
      steps: [{ reply: { toolCalls: [{ name: 'shell', args: { command: 'env; cat /proc/self/environ; echo "$OPENAI_API_KEY"' } }] } }],
      after: finish('printed the environment'),
    } as Script,
    'secret-error': {
      steps: [{ faults: [{ kind: '500', times: 2, message: `upstream refused key ${key}` }], reply: finish('survived an error quoting the key') }],
    } as Script,
    'secret-fatal': { steps: [{ faults: [{ kind: '401', times: 1, message: `Incorrect API key provided: ${key}` }] }] } as Script,
  };
}

export const secrets: Scenario = async (ctx) => {
  const key = `sk-chaos-${randomBytes(24).toString('hex')}`;
  const scripted = await scriptedServer(scripts(key));
  const traces = await startOtlpSink();
  const taskQueue = `chaos-secrets-${Date.now()}`;
  const worker = await ctx.stack.startWorker({
    TETHER_TASK_QUEUE: taskQueue,
    TETHER_SCRIPTED_URL: scripted.url,
    OPENAI_API_KEY: key,
    TETHER_LOG_LEVEL: 'debug',
    // Traces on, and the workflows bundled at start so the bundle carries the tracing interceptors (workflow and step spans).
    OTEL_EXPORTER_OTLP_ENDPOINT: traces.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '200',
    CHAOS_BUNDLE: '',
  });
  const tc = await ctx.stack.connect(taskQueue);
  const panel = await startPanel({ client: tc, port: await freePort(), token: `chaos-panel-${randomBytes(12).toString('hex')}` });
  const problems: string[] = [];
  const previousKey = process.env.OPENAI_API_KEY;
  try {
    const ids = await startEachScript(tc, key);
    const pasted = await pasteKeyIntoPrompt(tc, key, ids);
    if (pasted !== 'refused') problems.push(`a RunSpec whose system prompt holds the key was ${pasted}`);
    const outcomes = await outcomesOf(tc, ids, problems);
    const places = await leakPlaces(ctx.stack.db, worker.output(), panel, ids, worker.metricsPort, tc, key);
    // The worker flushes its last spans as it stops.
    await worker.kill('SIGTERM');
    places['exported traces (OTLP bodies)'] = occurrences(Buffer.concat(traces.bodies()), key);
    if (traces.spans() === 0) problems.push('no spans reached the trace collector, so the traces were not really searched');
    const leaks = Object.entries(places).filter(([, n]) => n > 0);
    for (const [place, n] of leaks) problems.push(`the key occurs ${n} times in ${place}`);
    return {
      name: 'secrets',
      faults: ids.length + 1,
      runs: ids.length,
      lost: leaks.length + (pasted === 'refused' ? 0 : 1) + (traces.spans() === 0 ? 1 : 0),
      figures: {
        placesSearched: Object.keys(places).length,
        spansSearched: traces.spans(),
        occurrences: leaks.reduce((n, [, c]) => n + c, 0),
        keyInSpec: pasted,
      },
      problems,
      notes: outcomes,
    };
  } finally {
    if (previousKey === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = previousKey;
    await panel.close();
    await tc.close();
    await worker.kill('SIGTERM');
    await scripted.close();
    await traces.close();
  }
};

/** One run of each script; their ids. */
async function startEachScript(tc: TetherClient, key: string): Promise<string[]> {
  const ids: string[] = [];
  for (const name of Object.keys(scripts(key))) {
    const { runId } = await startRun(tc, { goal: name, model: `scripted:${name}`, critic: { policy: 'off' } }, { id: `${name}-${Date.now()}` });
    ids.push(runId);
  }
  return ids;
}

/**
 * The operator's shell holds the key, and they paste it into the prompt by mistake: 'refused', 'not refused'
 * (the run it started joins ids) or what was thrown. The caller restores the environment.
 */
async function pasteKeyIntoPrompt(tc: TetherClient, key: string, ids: string[]): Promise<string> {
  process.env.OPENAI_API_KEY = key;
  let pasted = 'not refused';
  try {
    const { runId } = await startRun(tc, {
      goal: 'pasted',
      model: 'scripted:secret-env',
      system: `Use the key ${key} for everything.`,
      critic: { policy: 'off' },
    });
    ids.push(runId);
  } catch (err) {
    pasted = err instanceof TetherError && err.code === 'invalid' ? 'refused' : `threw ${(err as Error).message}`;
  }
  return pasted;
}

/** How each run ended; one that did not end within two minutes is a problem. */
async function outcomesOf(tc: TetherClient, ids: string[], problems: string[]): Promise<string[]> {
  const outcomes: string[] = [];
  for (const id of ids) {
    const r = await resultWithin(tc, id, 120_000);
    outcomes.push(`${id}: ${describe(r)}`);
    if ('lost' in r) problems.push(`run ${id} did not end: ${describe(r)}`);
  }
  return outcomes;
}

function occurrences(haystack: string | Buffer, needle: string): number {
  let n = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + 1)) n++;
  return n;
}

/** How often the key occurs in each place a leak would show. */
async function leakPlaces(
  db: string,
  workerLog: string,
  panel: { url: string; token: string },
  ids: string[],
  metricsPort: number,
  tc: Parameters<typeof getTranscript>[0],
  key: string,
): Promise<Record<string, number>> {
  const places: Record<string, number> = {};
  for (const file of [db, `${db}-wal`]) places[`the database file ${file}`] = occurrences(await readFile(file).catch(() => Buffer.alloc(0)), key);
  places['the worker log'] = occurrences(workerLog, key);
  const get = async (path: string) => (await fetch(new URL(path, panel.url), { headers: { authorization: `Bearer ${panel.token}` } })).text();
  let panelText = await get('api/runs');
  for (const id of ids) panelText += await get(`api/runs/${encodeURIComponent(id)}`);
  places['panel API responses'] = occurrences(panelText, key);
  places['panel metrics'] = occurrences(await get('metrics'), key);
  places['worker metrics'] = occurrences(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(), key);
  let transcripts = '';
  for (const id of ids) transcripts += JSON.stringify(await getTranscript(tc, id).catch(() => []));
  places['transcripts (query)'] = occurrences(transcripts, key);
  return places;
}
