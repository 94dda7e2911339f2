/**
 * Load: many concurrent runs on one worker, against a model that answers in
 * about 200 ms. All must complete; the figures are the worker's peak RSS,
 * throughput, schedule-to-start latency (from the runs' histories) and the
 * workflow cache's forced evictions (from the SDK's own metrics).
 */
import { startRun, type TetherClient } from '../../../src/client/runs.js';
import type { Script } from '../../../src/scripted/script.js';
import { inBatches, type Scenario } from '../context.js';
import { percentile } from '../report.js';
import { EventType, eventMs, resultWithin, scriptedServer } from '../stack.js';
import { completed, countTaskFailures, describe } from './fault-storm.js';

const TOOL_STEPS = 3;
const script: Script = {
  steps: [{ reply: { toolCalls: [{ name: 'write_file', args: { path: 'l{{step}}.txt', content: '{{step}}' } }] }, repeat: TOOL_STEPS, delayMs: 200 }],
  after: { toolCalls: [{ name: 'finish', args: { summary: 'carried the load' } }] },
} as Script;
const HISTORY_SAMPLE = 100;

export const load: Scenario = async (ctx) => {
  const runs = ctx.quick ? 50 : 1_000;
  const scripted = await scriptedServer({ load: script });
  const taskQueue = `chaos-load-${Date.now()}`;
  const worker = await ctx.stack.startWorker({ TETHER_TASK_QUEUE: taskQueue, TETHER_SCRIPTED_URL: scripted.url, TETHER_LOG_LEVEL: 'warn' });
  const tc = await ctx.stack.connect(taskQueue);
  try {
    const started = performance.now();
    const spec = { goal: 'load', model: 'scripted:load', critic: { policy: 'off' as const }, limits: { maxRuntime: '2h' } };
    const ids = await inBatches(Array.from({ length: runs }), 50, async (_, i) => (await startRun(tc, spec, { id: `load-${Date.now()}-${i}` })).runId);
    const results = await inBatches(ids, 100, (id) => resultWithin(tc, id, ctx.quick ? 300_000 : 3_600_000));
    const seconds = (performance.now() - started) / 1000;
    const problems = results.flatMap((r, i) => (completed(r, 'carried the load') ? [] : [`run ${ids[i]} ended ${describe(r)}`]));
    const sample = ids.filter((_, i) => i % Math.max(1, Math.floor(runs / HISTORY_SAMPLE)) === 0);
    const latency = await scheduleToStart(tc, sample);
    const evictions = await forcedEvictions(worker.metricsPort);
    const taskFailures = await countTaskFailures(tc, sample);
    problems.push(...taskFailures);
    return {
      name: 'load',
      faults: 0,
      runs,
      lost: problems.length,
      figures: {
        peakRssMiB: Math.round(worker.peakRssBytes() / 2 ** 20),
        runsPerSecond: runs / seconds,
        stepsPerSecond: (runs * (TOOL_STEPS + 1)) / seconds,
        activityScheduleToStartP95Ms: percentile(latency.activity, 95),
        workflowTaskScheduleToStartP95Ms: percentile(latency.workflowTask, 95),
        cacheEvictions: evictions,
      },
      problems,
    };
  } finally {
    await tc.close();
    await worker.kill('SIGTERM');
    await scripted.close();
  }
};

/** Scheduled → started, in ms, for every activity and workflow task in the runs' histories. */
async function scheduleToStart(tc: TetherClient, ids: string[]): Promise<{ activity: number[]; workflowTask: number[] }> {
  const activity: number[] = [];
  const workflowTask: number[] = [];
  await inBatches(ids, 10, async (id) => {
    const events = (await tc.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const byId = new Map(events.map((e) => [Number(e.eventId), e]));
    for (const e of events) {
      const activityScheduled = e.activityTaskStartedEventAttributes && byId.get(Number(e.activityTaskStartedEventAttributes.scheduledEventId));
      if (activityScheduled) activity.push(eventMs(e) - eventMs(activityScheduled));
      const taskScheduled =
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED && byId.get(Number(e.workflowTaskStartedEventAttributes?.scheduledEventId));
      if (taskScheduled) workflowTask.push(eventMs(e) - eventMs(taskScheduled));
    }
  });
  return { activity, workflowTask };
}

/** The SDK's count of workflows pushed out of the worker's cache to make room. */
async function forcedEvictions(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('temporal_sticky_cache_total_forced_eviction'))
    .reduce((n, line) => n + Number(line.split(' ').at(-1)), 0);
}
