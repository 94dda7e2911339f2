import type { DataConverter } from '@temporalio/common';
import type { Logger } from 'pino';
import type { BreakerRegistry } from '../llm/circuit-breaker.js';
import type { PriceTable } from '../llm/pricing.js';
import type { TranscriptCache } from '../llm/transcript-cache.js';
import type { Usage } from '../api/types.js';
import type { SandboxHost } from '../tools/host-probe.js';

/** Metrics the activities report; the worker wires prom-client behind it. */
export interface ActivityMetrics {
  llmCall(model: string, outcome: string, usage: Usage | undefined, costUsd: number, seconds?: number): void;
  toolCall(tool: string, outcome: string, durationMs: number): void;
}

/** One model call's live token stream on this worker (docs/architecture.md, "Live tokens"). */
export interface TokenStream {
  /** Where followers read it; carries the call's capability. */
  url: string;
  push(text: string): void;
  /** Ends the stream: the reply is complete (`ok`) or the attempt failed. */
  close(ok: boolean): void;
}

/** Everything activities touch outside themselves, handed in so tests can swap any of it. */
export interface ActivityDeps {
  /** Where provider keys and settings are read; never passed to tools. */
  env: NodeJS.ProcessEnv;
  /** Parent of the default per-run workspaces. */
  workspaceRoot: string;
  /** Parent of the runs' checkpoint repositories (default `<TETHER_HOME>/checkpoints`); outside every workspace. */
  checkpointRoot?: string;
  /** Base URL (with /v1) of the scripted model server, started on first use if needed. */
  scriptedUrl: () => Promise<string>;
  prices: PriceTable;
  /** Transcripts of recent runs, so each LLM call carries only what is new. */
  transcripts: TranscriptCache;
  breakers?: BreakerRegistry;
  logger: Logger;
  metrics?: ActivityMetrics;
  random?: () => number;
  /** What confinement this machine allows tool calls (probed once at start when absent; tests force it). */
  sandboxHost?: () => Promise<SandboxHost>;
  /**
   * Where activities can query their run (src/activities/run-query.ts), with the data converter its
   * payloads need (the encryption codec, when one is set).
   */
  temporal?: { address: string; namespace: string; dataConverter?: DataConverter };
  /** Opens a model call's live token stream (none: calls are not streamed to followers). */
  tokenStreams?: () => Promise<TokenStream>;
  /** This worker's own task queue for workspace-bound activities; null when workspaces are shared. */
  workspaceQueue?: string | null;
}
