import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { connectTemporal } from '../src/server/temporal-connection.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { connectTether, startRun, type TetherClient } from '../src/client/runs.js';
import { waitForResult } from '../src/client/run-result.js';
import { BreakerRegistry } from '../src/llm/circuit-breaker.js';
import { startMetricsServer, workerReadiness } from '../src/ops/metrics-server.js';
import { createTetherMetrics } from '../src/ops/metrics.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { startDevServer } from '../src/server/dev-server.js';
import { freePort } from '../src/server/free-port.js';
import { createTetherWorker } from '../src/worker.js';
import { eventually } from './helpers/eventually.js';
import { workflowBundle } from './helpers/harness.js';

const quiet = pino({ level: 'silent' });

const scripts: Record<string, Script> = {
  'metrics-run': {
    steps: [
      { reply: { toolCalls: [{ name: 'write_file', args: { path: 'a.txt', content: 'counted' } }], usage: { prompt: 100, completion: 20 } } },
      { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }], usage: { prompt: 150, completion: 10 } } },
    ],
  },
};

/** The value of one series line, e.g. `tether_steps_total{model="x"}`; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

describe('metrics registry', () => {
  it('reports LLM calls, tokens, cost and latency by provider and model', async () => {
    const { registry, activities } = createTetherMetrics();
    activities.llmCall('openai:gpt-4.1-mini', 'ok', { inputTokens: 10, outputTokens: 5, totalTokens: 15 }, 0.002, 1.5);
    activities.llmCall('openai:gpt-4.1-mini', 'rate_limited', undefined, 0, 0.1);
    const text = await registry.metrics();
    expect(sample(text, 'tether_llm_calls_total{provider="openai",model="openai:gpt-4.1-mini",outcome="ok"}')).toBe(1);
    expect(sample(text, 'tether_llm_calls_total{provider="openai",model="openai:gpt-4.1-mini",outcome="rate_limited"}')).toBe(1);
    expect(sample(text, 'tether_llm_tokens_total{provider="openai",model="openai:gpt-4.1-mini",direction="input"}')).toBe(10);
    expect(sample(text, 'tether_llm_cost_usd_total{provider="openai",model="openai:gpt-4.1-mini"}')).toBeCloseTo(0.002);
    expect(sample(text, 'tether_llm_latency_seconds_count{provider="openai",model="openai:gpt-4.1-mini",outcome="ok"}')).toBe(1);
  });

  it('shows each provider breaker as 0 closed, 1 half-open, 2 open at scrape time', async () => {
    let now = 0;
    const breakers = new BreakerRegistry({ failureThreshold: 1, initialBackoffMs: 1_000, now: () => now });
    const { registry } = createTetherMetrics(undefined, breakers);
    breakers.get('openai');
    breakers.get('anthropic').onFailure();
    let text = await registry.metrics();
    expect(sample(text, 'tether_circuit_breaker_state{provider="openai"}')).toBe(0);
    expect(sample(text, 'tether_circuit_breaker_state{provider="anthropic"}')).toBe(2);
    now = 2_000;
    breakers.get('anthropic').allow();
    text = await registry.metrics();
    expect(sample(text, 'tether_circuit_breaker_state{provider="anthropic"}')).toBe(1);
  });

  it('counts kills from the final state and their latency from the kill sink', async () => {
    const { registry, sinks } = createTetherMetrics();
    sinks.runEnded('killed', 'scripted:x', 3, 0);
    sinks.kill(420);
    sinks.emergencyStop('tripped', 'threshold');
    sinks.emergencyStop('cleared', 'manual');
    sinks.control('kill', 'update');
    sinks.criticDecision('extend');
    const text = await registry.metrics();
    expect(sample(text, 'tether_kills_total')).toBe(1);
    expect(sample(text, 'tether_kill_latency_seconds_sum')).toBeCloseTo(0.42);
    expect(sample(text, 'tether_emergency_stops_total{action="tripped",cause="threshold"}')).toBe(1);
    expect(sample(text, 'tether_emergency_stops_total{action="cleared",cause="manual"}')).toBe(1);
    expect(sample(text, 'tether_control_messages_total{name="kill",via="update"}')).toBe(1);
    expect(sample(text, 'tether_critic_decisions_total{decision="extend"}')).toBe(1);
  });
});

describe('worker metrics endpoint after a run', () => {
  let scripted: ScriptedServer;
  let tc: TetherClient;
  let workspaceRoot: string;
  let stopWorker: () => Promise<void>;
  let metricsUrl: string;
  let closeMetrics: () => Promise<void>;
  let runId: string;

  beforeAll(async () => {
    const address = inject('temporalAddress');
    const taskQueue = `ops-metrics-${process.pid}-${Date.now()}`;
    scripted = await startScriptedServer({ port: 0, scripts });
    workspaceRoot = await mkdtemp(path.join(os.tmpdir(), 'tether-ops-'));
    const temporalMetricsPort = await freePort();
    const { worker, connection, metrics } = await createTetherWorker({
      address,
      taskQueue,
      workflowBundle: await workflowBundle(),
      scriptedUrl: scripted.url,
      workspaceRoot,
      logger: quiet,
      shutdownGraceMs: 2_000,
      temporalMetricsPort,
    });
    const running = worker.run();
    stopWorker = async () => {
      worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
    };
    const server = await startMetricsServer({
      port: 0,
      registry: metrics.registry,
      temporalMetricsUrl: `http://127.0.0.1:${temporalMetricsPort}/metrics`,
      readiness: workerReadiness(worker, connection, { address }),
      logger: quiet,
    });
    metricsUrl = server.url;
    closeMetrics = server.close;
    tc = await connectTether({ address, taskQueue });
    ({ runId } = await startRun(tc, { goal: 'count me', model: 'scripted:metrics-run', tools: ['write_file'] }, { id: `ops-metrics-${Date.now()}` }));
    const result = await waitForResult(tc, runId);
    expect(result.status).toBe('completed');
  });

  afterAll(async () => {
    await closeMetrics?.();
    await tc?.close();
    await stopWorker?.();
    await scripted?.close();
    if (workspaceRoot) await rm(workspaceRoot, { recursive: true, force: true });
  });

  it('serves the run, step, LLM and tool series with their labels and counts', async () => {
    const model = 'scripted:metrics-run';
    // Sink calls run after the workflow task that made them completes, a moment after the result.
    const { body } = await eventually(
      'the run counted as ended',
      () => get(`${metricsUrl}/metrics`),
      (r) => sample(r.body, `tether_runs_ended_total{state="completed",model="${model}"}`) === 1,
    );
    expect(sample(body, `tether_runs_started_total{model="${model}"}`)).toBe(1);
    expect(sample(body, `tether_steps_total{model="${model}"}`)).toBe(2);
    expect(sample(body, `tether_llm_calls_total{provider="scripted",model="${model}",outcome="ok"}`)).toBe(2);
    expect(sample(body, `tether_llm_latency_seconds_count{provider="scripted",model="${model}",outcome="ok"}`)).toBe(2);
    expect(sample(body, `tether_llm_tokens_total{provider="scripted",model="${model}",direction="input"}`)).toBe(250);
    expect(sample(body, `tether_llm_tokens_total{provider="scripted",model="${model}",direction="output"}`)).toBe(30);
    expect(sample(body, 'tether_tool_executions_total{tool="write_file",outcome="ok"}')).toBe(1);
    expect(sample(body, 'tether_tool_duration_seconds_count{tool="write_file",outcome="ok"}')).toBe(1);
  });

  it("appends the Temporal SDK's own temporal_* series on the same endpoint", async () => {
    const { body } = await eventually(
      "the SDK's temporal_* series",
      () => get(`${metricsUrl}/metrics`),
      (r) => /^temporal_\w+/m.test(r.body),
    );
    expect(body).toMatch(/^temporal_workflow_completed/m);
    expect(body).not.toContain('temporal_* series unavailable');
  });

  it('answers /live and /ready while the worker polls a reachable server', async () => {
    expect((await get(`${metricsUrl}/live`)).status).toBe(200);
    expect(await get(`${metricsUrl}/ready`)).toEqual({ status: 200, body: 'ready\n' });
  });

  it("still serves Tether's series, with a note, when the SDK's exporter does not answer", async () => {
    const server = await startMetricsServer({
      port: 0,
      registry: createTetherMetrics().registry,
      temporalMetricsUrl: `http://127.0.0.1:${await freePort()}/metrics`,
      readiness: async () => null,
    });
    try {
      const { status, body } = await get(`${server.url}/metrics`);
      expect(status).toBe(200);
      expect(body).toContain('# HELP tether_runs_started_total');
      expect(body).toMatch(/^# temporal_\* series unavailable: .+$/m);
    } finally {
      await server.close();
    }
  });
});

describe('readiness follows the Temporal server', () => {
  it('turns 503 when the server stops and 200 when it returns', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tether-ready-'));
    const port = await freePort();
    const db = path.join(dir, 'temporal.db');
    let server = await startDevServer({ port, db, headless: true });
    const address = server.address;
    const { worker, connection } = await createTetherWorker({
      address,
      taskQueue: `ops-ready-${process.pid}`,
      workflowBundle: await workflowBundle(),
      workspaceRoot: dir,
      logger: quiet,
      shutdownGraceMs: 1_000,
    });
    const running = worker.run();
    const probe = await connectTemporal({ address });
    const metrics = await startMetricsServer({ port: 0, registry: createTetherMetrics().registry, readiness: workerReadiness(worker, probe, { address }) });
    try {
      await eventually(
        'the worker to be ready',
        () => get(`${metrics.url}/ready`),
        (r) => r.status === 200,
      );
      await server.stop();
      const down = await eventually(
        'the worker to be not ready',
        () => get(`${metrics.url}/ready`),
        (r) => r.status === 503,
      );
      expect(down.body).toMatch(/^not ready: Temporal at .+ is unreachable: .+\n$/);
      expect((await get(`${metrics.url}/live`)).status).toBe(200);
      server = await startDevServer({ port, db, headless: true });
      await eventually(
        'the worker to be ready again',
        () => get(`${metrics.url}/ready`),
        (r) => r.status === 200,
        { timeoutMs: 60_000 },
      );
    } finally {
      await metrics.close();
      worker.shutdown();
      await running.catch(() => undefined);
      await probe.close();
      await connection.close();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
