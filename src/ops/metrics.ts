import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { TetherSinks } from '../api/sinks.js';
import type { Usage } from '../api/types.js';
import type { ActivityMetrics } from '../activities/deps.js';
import type { BreakerRegistry } from '../llm/circuit-breaker.js';

const BREAKER_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

function providerOf(model: string): string {
  return model.slice(0, Math.max(0, model.indexOf(':'))) || model;
}

/**
 * Tether's own Prometheus series. One object serves both the activities
 * (LLM calls, tools) and the workflow sinks (runs, steps, stops, kills).
 */
export function createTetherMetrics(registry = new Registry(), breakers?: BreakerRegistry) {
  const runsStarted = new Counter({ name: 'tether_runs_started_total', help: 'Agent runs started', labelNames: ['model'], registers: [registry] });
  const runsEnded = new Counter({ name: 'tether_runs_ended_total', help: 'Agent runs ended, by final state', labelNames: ['state', 'model'], registers: [registry] });
  const steps = new Counter({ name: 'tether_steps_total', help: 'Agent steps (model replies)', labelNames: ['model'], registers: [registry] });
  const llmCalls = new Counter({ name: 'tether_llm_calls_total', help: 'LLM calls by outcome', labelNames: ['provider', 'model', 'outcome'], registers: [registry] });
  const llmLatency = new Histogram({ name: 'tether_llm_call_seconds', help: 'LLM call latency', labelNames: ['provider', 'model'], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120], registers: [registry] });
  const tokens = new Counter({ name: 'tether_llm_tokens_total', help: 'Tokens by direction', labelNames: ['provider', 'model', 'direction'], registers: [registry] });
  const cost = new Counter({ name: 'tether_llm_cost_usd_total', help: 'LLM cost in USD', labelNames: ['provider', 'model'], registers: [registry] });
  const tools = new Counter({ name: 'tether_tool_executions_total', help: 'Tool executions by outcome', labelNames: ['tool', 'outcome'], registers: [registry] });
  const toolSeconds = new Histogram({ name: 'tether_tool_duration_seconds', help: 'Tool execution time', labelNames: ['tool'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300], registers: [registry] });
  const estops = new Counter({ name: 'tether_emergency_stops_total', help: 'Emergency stops tripped and cleared', labelNames: ['action', 'cause'], registers: [registry] });
  const controls = new Counter({ name: 'tether_control_messages_total', help: 'Control messages applied', labelNames: ['name', 'via'], registers: [registry] });
  const critic = new Counter({ name: 'tether_critic_decisions_total', help: 'Critic decisions', labelNames: ['decision'], registers: [registry] });
  const kills = new Counter({ name: 'tether_kills_total', help: 'Runs killed', registers: [registry] });
  const killLatency = new Histogram({ name: 'tether_kill_latency_seconds', help: 'Kill to in-flight work stopped', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10], registers: [registry] });
  new Gauge({
    name: 'tether_circuit_breaker_state',
    help: 'Circuit breaker per provider: 0 closed, 1 half-open, 2 open',
    labelNames: ['provider'],
    registers: [registry],
    collect() {
      for (const b of breakers?.all() ?? []) this.set({ provider: b.provider }, BREAKER_VALUE[b.state]);
    },
  });

  const activities: ActivityMetrics = {
    llmCall(model: string, outcome: string, usage: Usage | undefined, costUsd: number, seconds?: number) {
      const provider = providerOf(model);
      llmCalls.inc({ provider, model, outcome });
      if (seconds !== undefined) llmLatency.observe({ provider, model }, seconds);
      if (usage) {
        tokens.inc({ provider, model, direction: 'input' }, usage.inputTokens);
        tokens.inc({ provider, model, direction: 'output' }, usage.outputTokens);
      }
      if (costUsd > 0) cost.inc({ provider, model }, costUsd);
    },
    toolCall(tool: string, outcome: string, durationMs: number) {
      tools.inc({ tool, outcome });
      toolSeconds.observe({ tool }, durationMs / 1000);
    },
  };
  const sinks: TetherSinks['metrics'] = {
    runStarted: (model) => runsStarted.inc({ model }),
    runEnded: (state, model) => {
      runsEnded.inc({ state, model });
      if (state === 'killed') kills.inc();
    },
    step: (model) => steps.inc({ model }),
    emergencyStop: (action, cause) => estops.inc({ action, cause }),
    control: (name, via) => controls.inc({ name, via }),
    criticDecision: (decision) => critic.inc({ decision }),
    kill: (latencyMs) => killLatency.observe(latencyMs / 1000),
  };
  return { registry, activities, sinks };
}

export type TetherMetrics = ReturnType<typeof createTetherMetrics>;

/** Adds Node's process metrics (memory, event loop, GC) to a registry once. */
export function withProcessMetrics(registry: Registry): Registry {
  collectDefaultMetrics({ register: registry, prefix: 'tether_process_' });
  return registry;
}
