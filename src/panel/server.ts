import { Hono } from 'hono';
import { methodNotAllowed } from 'hono/method-not-allowed';
import { Counter, Gauge, Registry } from 'prom-client';
import type { TetherClient } from '../client/runs.js';
import { requireToken, resolveToken, type ResolvedToken } from '../ops/access-token.js';
import { serveApp } from '../ops/listen.js';
import { healthRoutes, temporalUnreachable } from '../ops/metrics-server.js';
import { withProcessMetrics } from '../ops/metrics.js';
import { DEFAULT_OPERATOR, parseOperatorTokens, type PanelOperator } from '../ops/panel-operators.js';
import { apiRoutes } from './api.js';
import { assetRoutes } from './assets.js';
import { createEventHub, type EventHub } from './events.js';
import { errorResponse, panelSecurityHeaders, rejectMalformedUrl } from './http.js';
import { countRequests } from './request-metrics.js';
import { createTokenRelay } from './tokens.js';

export interface PanelOptions {
  client: TetherClient;
  port: number;
  host?: string;
  /** The API token; absent: TETHER_PANEL_TOKEN, else the one saved under TETHER_HOME (created on first use). */
  token?: string;
  temporalUiUrl?: string;
  /** Open event streams allowed at once (default 32). */
  maxEventStreams?: number;
  /** Where TETHER_PANEL_TOKEN, TETHER_PANEL_TOKENS and TETHER_HOME are read (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface Panel {
  url: string;
  token: string;
  /** Where the token came from, and the file that holds it when it is saved. */
  tokenSource: ResolvedToken;
  /** The names of the operators TETHER_PANEL_TOKENS adds (besides "panel", the token above). */
  operators: string[];
  port: number;
  close(): Promise<void>;
}

function panelMetrics() {
  const registry = withProcessMetrics(new Registry());
  const requests = new Counter({
    name: 'tether_panel_http_requests_total',
    help: 'Panel HTTP requests',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  const streams = new Gauge({ name: 'tether_panel_sse_clients', help: 'Open event streams', registers: [registry] });
  const tokenStreams = new Gauge({
    name: 'tether_panel_token_streams',
    help: 'Open live-token streams (pages) and the runs they follow',
    labelNames: ['of'],
    registers: [registry],
  });
  return { registry, requests, streams, tokenStreams };
}

function panelApp(opts: PanelOptions, operators: PanelOperator[], hub: EventHub, metrics: ReturnType<typeof panelMetrics>): Hono {
  const app = new Hono();
  app.use(countRequests(metrics.requests));
  app.use(panelSecurityHeaders());
  app.use(rejectMalformedUrl());
  app.use(methodNotAllowed({ app, onMethodNotAllowed: (c, methods) => c.json({ error: `use ${methods.filter((m) => m !== 'HEAD').join(' or ')}` }, 405) }));
  const address = opts.client.connection.options.address ?? 'its address';
  app.route('/', healthRoutes({ registry: metrics.registry, readiness: () => temporalUnreachable(opts.client.connection, address) }));
  const tokens = createTokenRelay(opts.client, opts.maxEventStreams, (pages, runs) => {
    metrics.tokenStreams.set({ of: 'pages' }, pages);
    metrics.tokenStreams.set({ of: 'runs' }, runs);
  });
  app.route('/api', apiRoutes({ client: opts.client, hub, tokens, temporalUiUrl: opts.temporalUiUrl ?? 'http://localhost:8233', operators }));
  app.route('/', assetRoutes());
  app.notFound((c) => c.json({ error: 'not found' }, 404));
  app.onError(errorResponse);
  return app;
}

/**
 * The operator's web panel: a small page and the JSON API it uses. Every /api
 * request needs the token in the Authorization header — never a cookie — so
 * another site cannot drive it from a visitor's browser.
 */
export async function startPanel(opts: PanelOptions): Promise<Panel> {
  const tokenSource =
    opts.token !== undefined
      ? { token: requireToken(opts.token, 'the panel token'), source: 'env' as const }
      : await resolveToken('TETHER_PANEL_TOKEN', 'panel-token', opts.env);
  const operators = panelOperators(tokenSource.token, opts.env ?? process.env);
  const metrics = panelMetrics();
  const hub = createEventHub(opts.client, { maxStreams: opts.maxEventStreams, onCount: (n) => metrics.streams.set(n) });
  const listening = await serveApp(panelApp(opts, operators, hub, metrics), opts.port, opts.host ?? '127.0.0.1');
  return {
    url: `${listening.url}/`,
    token: tokenSource.token,
    tokenSource,
    operators: operators.slice(1).map((o) => o.name),
    port: listening.port,
    async close() {
      hub.close();
      await listening.close();
    },
  };
}

/** The panel token's operator ("panel") first, then TETHER_PANEL_TOKENS's named ones; a token shared with the panel token would hide who acted. */
function panelOperators(token: string, env: NodeJS.ProcessEnv): PanelOperator[] {
  const named = env.TETHER_PANEL_TOKENS !== undefined ? parseOperatorTokens(env.TETHER_PANEL_TOKENS) : [];
  const shared = named.find((o) => o.token === token);
  if (shared)
    throw new Error(`TETHER_PANEL_TOKENS gives operator "${shared.name}" the panel token (TETHER_PANEL_TOKEN): give each operator a token of their own`);
  return [{ name: DEFAULT_OPERATOR, token }, ...named];
}
