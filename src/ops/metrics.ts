/**
 * Tether's own Prometheus series (`tether_*`). One registry receives both what
 * activities report (LLM and tool calls, as they happen) and what workflows
 * report through sinks (runs, steps, stops, control messages; never on
 * replay). Label values are bounded by design: models, providers, tools,
 * states, message names; never run ids or free text.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ActivityMetrics } from '../activities/deps.js';
import type { TetherSinks } from '../api/sinks.js';
import type { BreakerRegistry, BreakerState } from '../llm/circuit-breaker.js';

// Ordered by severity so an alert can say `tether_circuit_breaker_state > 0`.
const BREAKER_VALUE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

const LLM_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160];
const TOOL_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300];
const KILL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];

/** `openai:gpt-4.1-mini` → `openai`. */
function providerOf(model: string): string {
  const at = model.indexOf(':');
  return at > 0 ? model.slice(0, at) : 'unknown';
}

/** A worker's metrics: the registry to scrape, the activities' reporter and the workflows' sink. */
export interface TetherMetrics {
  registry: Registry;
  activities: ActivityMetrics;
  sinks: TetherSinks['metrics'];
}

/**
 * Creates Tether's series in `registry` (a fresh one by default, so tests and
 * several workers in one process never collide). `breakers` feeds
 * `tether_circuit_breaker_state`.
 */
export function createTetherMetrics(registry: Registry = new Registry(), breakers?: BreakerRegistry): TetherMetrics {
  const registers = [registry];
  const sinks = runMetrics(registers);
  const activities = activityMetrics(registers);
  breakerGauge(registers, breakers);
  return { registry, activities, sinks };
}

/** What activities report as it happens: LLM calls (outcome, latency, tokens, cost) and tool executions. */
function activityMetrics(registers: Registry[]): ActivityMetrics {
  const byCall = ['provider', 'model', 'outcome'];
  const llmCalls = new Counter({
    name: 'tether_llm_calls_total',
    help: 'LLM call attempts, by outcome (ok or the error class)',
    labelNames: byCall,
    registers,
  });
  const llmLatency = new Histogram({
    name: 'tether_llm_latency_seconds',
    help: 'Wall time of an LLM call attempt',
    labelNames: byCall,
    buckets: LLM_BUCKETS,
    registers,
  });
  const tokens = new Counter({
    name: 'tether_llm_tokens_total',
    help: 'Tokens used, by direction (input or output)',
    labelNames: ['provider', 'model', 'direction'],
    registers,
  });
  const cost = new Counter({ name: 'tether_llm_cost_usd_total', help: 'Estimated LLM spend in US dollars', labelNames: ['provider', 'model'], registers });
  const tools = new Counter({ name: 'tether_tool_executions_total', help: 'Tool executions, by outcome', labelNames: ['tool', 'outcome'], registers });
  const toolDuration = new Histogram({
    name: 'tether_tool_duration_seconds',
    help: 'Wall time of a tool execution',
    labelNames: ['tool', 'outcome'],
    buckets: TOOL_BUCKETS,
    registers,
  });
  return {
    llmCall(model, outcome, usage, costUsd, seconds) {
      const provider = providerOf(model);
      llmCalls.inc({ provider, model, outcome });
      if (seconds !== undefined) llmLatency.observe({ provider, model, outcome }, seconds);
      if (usage) {
        tokens.inc({ provider, model, direction: 'input' }, usage.inputTokens);
        tokens.inc({ provider, model, direction: 'output' }, usage.outputTokens);
      }
      if (costUsd > 0) cost.inc({ provider, model }, costUsd);
    },
    toolCall(tool, outcome, durationMs) {
      tools.inc({ tool, outcome });
      toolDuration.observe({ tool, outcome }, durationMs / 1000);
    },
  };
}

/** What workflows report through their sink: runs, steps, stops, control messages, critic decisions, kills. */
function runMetrics(registers: Registry[]): TetherSinks['metrics'] {
  const runsStarted = new Counter({
    name: 'tether_runs_started_total',
    help: 'Runs started (a continue-as-new is not a new run)',
    labelNames: ['model'],
    registers,
  });
  const runsEnded = new Counter({ name: 'tether_runs_ended_total', help: 'Runs ended, by final state', labelNames: ['state', 'model'], registers });
  const steps = new Counter({ name: 'tether_steps_total', help: 'Agent steps (one model reply each)', labelNames: ['model'], registers });
  const estops = new Counter({
    name: 'tether_emergency_stops_total',
    help: 'Emergency stops, by action (tripped or cleared) and cause',
    labelNames: ['action', 'cause'],
    registers,
  });
  const critic = new Counter({ name: 'tether_critic_decisions_total', help: 'Critic decisions applied to runs', labelNames: ['decision'], registers });
  const kills = new Counter({ name: 'tether_kills_total', help: 'Runs that ended killed', registers });
  const killLatency = new Histogram({ name: 'tether_kill_latency_seconds', help: 'From a kill request to the run ending', buckets: KILL_BUCKETS, registers });
  const control = new Counter({
    name: 'tether_control_messages_total',
    help: 'Control messages received, by name and how they arrived',
    labelNames: ['name', 'via'],
    registers,
  });
  return {
    runStarted: (model) => runsStarted.inc({ model }),
    runEnded: (state, model) => {
      runsEnded.inc({ state, model });
      // Counted here rather than in `kill` so a kill whose latency was never measured still counts.
      if (state === 'killed') kills.inc();
    },
    step: (model) => steps.inc({ model }),
    emergencyStop: (action, cause) => estops.inc({ action, cause }),
    control: (name, via) => control.inc({ name, via }),
    criticDecision: (decision) => critic.inc({ decision }),
    kill: (latencyMs) => killLatency.observe(latencyMs / 1000),
  };
}

/** `tether_circuit_breaker_state`, read from the breakers at scrape time. */
function breakerGauge(registers: Registry[], breakers: BreakerRegistry | undefined): void {
  new Gauge({
    name: 'tether_circuit_breaker_state',
    help: 'Circuit breaker per provider: 0 closed, 1 half-open, 2 open',
    labelNames: ['provider'],
    registers,
    // Read at scrape time from the breakers themselves, so the gauge can never
    // lag a state change made inside an activity.
    collect() {
      this.reset();
      for (const { provider, state } of breakers?.all() ?? []) this.set({ provider }, BREAKER_VALUE[state]);
    },
  });
}

/** Adds Node's process metrics (memory, event loop lag, GC) as `tether_process_*`. */
export function withProcessMetrics(registry: Registry): Registry {
  collectDefaultMetrics({ register: registry, prefix: 'tether_process_' });
  return registry;
}
