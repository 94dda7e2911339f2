// OpenTelemetry traces end to end: the real `tether worker` and `tether run`
// processes export OTLP/HTTP to a collector this test runs, and the spans of
// one run link client → workflow → step → activity in a single trace.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';
import type { Script } from '../src/scripted/script.js';
import { freePort } from '../src/server/free-port.js';
import { runCli } from './helpers/cli-process.js';
import { eventually } from './helpers/eventually.js';

const CLI = fileURLToPath(new URL('../bin/tether.js', import.meta.url));
const SECRET = 'sk-tether-trace-secret-0123456789';

const scripts: Record<string, Script> = {
  traced: {
    steps: [
      { reply: { toolCalls: [{ name: 'shell', args: { command: 'echo tool-output-marker' } }] } },
      { reply: { toolCalls: [{ name: 'finish', args: { summary: 'done' } }] } },
    ],
  },
};

interface Span {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  service: string;
  attributes: Record<string, unknown>;
}

/** A minimal OTLP/HTTP JSON collector: keeps every span and every raw body. */
function startCollector(): Promise<{ server: Server; url: string; spans: Span[]; raw: string[] }> {
  const spans: Span[] = [];
  const raw: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      raw.push(body);
      if (req.url === '/v1/traces') {
        for (const rs of JSON.parse(body).resourceSpans ?? []) {
          const service = rs.resource?.attributes?.find((a: { key: string }) => a.key === 'service.name')?.value?.stringValue;
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              const attributes = Object.fromEntries(
                (s.attributes ?? []).map((a: { key: string; value: Record<string, unknown> }) => [a.key, Object.values(a.value)[0]]),
              );
              spans.push({ name: s.name, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, service, attributes });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, spans, raw })),
  );
}

let collector: Awaited<ReturnType<typeof startCollector>>;
let scripted: ScriptedServer;
let worker: ChildProcess;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  collector = await startCollector();
  scripted = await startScriptedServer({ port: 0, scripts });
  env = {
    ...process.env,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TETHER_TASK_QUEUE: `traces-${Date.now()}`,
    TETHER_SCRIPTED_URL: scripted.url,
    TETHER_HOME: await mkdtemp(path.join(os.tmpdir(), 'tether-traces-')),
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OPENAI_API_KEY: SECRET,
    TETHER_LOG_LEVEL: 'warn',
  };
  worker = spawn(process.execPath, [CLI, 'worker', '--metrics-port', String(await freePort())], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  worker.stdout!.on('data', (d) => (output += d));
  worker.stderr!.on('data', (d) => (output += d));
  const started = () => output.includes('worker polling');
  await eventually('the worker to poll or exit', () => started() || worker.exitCode !== null, Boolean, { timeoutMs: 60_000 }).catch(() => undefined);
  if (!started()) throw new Error(`worker did not start (exit code ${worker.exitCode}):\n${output}`);
}, 90_000);

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    worker.kill('SIGTERM');
    await new Promise((resolve) => worker.once('exit', resolve));
  }
  await scripted?.close();
  collector?.server.close();
});

const cli = (args: string[]) => runCli(args, env);

describe('OpenTelemetry traces', () => {
  it('link the client, the run, each step, each LLM call and each tool call in one trace', async () => {
    const id = `traced-${Date.now()}`;
    const run = await cli(['run', '--id', id, '--model', 'scripted:traced', '--critic', 'off', '--wait', '--output', 'json', 'goal-marker: the prompt itself']);
    expect(run.code, run.stderr).toBe(0);

    const start = () => collector.spans.find((s) => s.name === 'StartWorkflow:agentRun' && s.attributes.temporalWorkflowId === id);
    const ofRun = () => collector.spans.filter((s) => s.traceId === start()?.traceId);
    await eventually('the tool span', () => ofRun().some((s) => s.name === 'RunActivity:runTool'), Boolean, { intervalMs: 200 });
    // Workflow spans leave the sandbox when the run ends; the batch exporter sends them a moment later.
    await eventually('the workflow span', () => ofRun().some((s) => s.name === 'RunWorkflow:agentRun'), Boolean, { intervalMs: 200 });

    const spans = ofRun();
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: Span) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);

    const client = start()!;
    expect(client.service).toBe('tether-client');
    const workflow = spans.find((s) => s.name === 'RunWorkflow:agentRun');
    expect(workflow?.service).toBe('tether-worker');
    expect(parentOf(workflow!)?.spanId).toBe(client.spanId);

    const steps = spans.filter((s) => /^step \d+$/.test(s.name));
    expect(steps.map((s) => s.name).sort()).toEqual(['step 1', 'step 2']);
    for (const step of steps) {
      expect(parentOf(step)?.spanId).toBe(workflow!.spanId);
      expect(step.attributes['tether.run_id']).toBe(id);
    }

    const llmCalls = spans.filter((s) => s.name === 'RunActivity:callModel');
    expect(llmCalls).toHaveLength(2);
    for (const call of llmCalls) {
      // RunActivity's parent is the workflow's StartActivity, whose parent is the step.
      expect(parentOf(parentOf(call)!)?.name).toMatch(/^step \d$/);
      expect(call.attributes['gen_ai.request.model']).toBe('scripted:traced');
    }
    const tools = spans.filter((s) => s.name === 'RunActivity:runTool');
    expect(tools).toHaveLength(1);
    expect(parentOf(parentOf(tools[0])!)?.name).toBe('step 1');
    expect(tools[0].attributes).toMatchObject({ 'tether.tool': 'shell', 'tether.tool.success': true, 'tether.run_id': id });

    // Spans say what ran, never what was said: no key, no prompt, no tool output.
    const exported = collector.raw.join('\n');
    for (const text of [SECRET, 'goal-marker', 'tool-output-marker']) expect(exported).not.toContain(text);
  }, 60_000);
});
