import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';
import { bodyLimit } from 'hono/body-limit';
import { z } from 'zod';
import { type Audit, controlSchemas, type ControlName } from '../api/control.js';
import { forkRequestSchema } from '../api/fork-request.js';
import { runSpecSchema } from '../api/spec.js';
import { isTerminal } from '../api/types.js';
import { fleetEmergency } from '../client/fleet.js';
import { forkRun } from '../client/fork.js';
import { listRuns } from '../client/list.js';
import { describeRun, readRunStatus, readTranscript } from '../client/run-status.js';
import { controlRun, startRun, type TetherClient } from '../client/runs.js';
import { waitForResult } from '../client/run-result.js';
import { operatorOf, type PanelOperator } from '../ops/panel-operators.js';
import type { EventHub } from './events.js';
import type { TokenRelay } from './tokens.js';
import { HttpError, jsonBody } from './http.js';

/** The URL's action names and the control messages they send. */
const ACTIONS: Record<string, ControlName> = {
  steer: 'steer',
  extend: 'extend',
  kill: 'kill',
  estop: 'emergencyStop',
  clear: 'clearEmergency',
  approve: 'approve',
  answer: 'answer',
  decide: 'decideTool',
};

const MAX_BODY = 1_000_000;
const UNAUTHORIZED = 'missing or wrong token: send Authorization: Bearer <TETHER_PANEL_TOKEN>';

const startSchema = runSpecSchema.extend({ id: z.string().optional() });
const fleetSchema = z.strictObject({
  action: z.enum(['trip', 'clear'], { error: 'must be "trip" or "clear"' }),
  // Blank is refused, as a run refuses a blank stop reason: leaving it out gives none.
  reason: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty (leave it out to give none)').max(2_000).optional(),
  // Taken as any control body takes it, and replaced: the operator is who the token names.
  audit: z.unknown().optional(),
});

export interface ApiContext {
  client: TetherClient;
  hub: EventHub;
  /** The runs' live tokens, relayed from the workers. */
  tokens: TokenRelay;
  temporalUiUrl: string;
  /** Who may use the API: TETHER_PANEL_TOKEN's operator ("panel") and TETHER_PANEL_TOKENS's named ones. */
  operators: readonly PanelOperator[];
}

/** The operator the request's token authenticated, set by the auth middleware. */
type Env = { Variables: { operator: string } };

/** A run id from the URL; Temporal's own limit is 1000 characters. */
function runIdOf(value: string | undefined): string {
  if (!value || value.length > 1_000 || /\p{Cc}/u.test(value)) throw new HttpError(400, 'invalid run id: 1 to 1000 characters, no control characters');
  return value;
}

/**
 * Every failure is the same 401, whatever was wrong with the header: nothing
 * to learn from the difference. The token that matched names the operator.
 */
function requireOperator(operators: readonly PanelOperator[]): MiddlewareHandler<Env> {
  const refuse = (c: Context) => c.json({ error: UNAUTHORIZED }, 401);
  return bearerAuth({
    verifyToken: (given, c) => {
      const operator = operatorOf(given, operators);
      if (operator !== null) c.set('operator', operator);
      return operator !== null;
    },
    noAuthenticationHeader: { message: refuse },
    invalidAuthenticationHeader: { message: refuse },
    invalidToken: { message: refuse },
  });
}

/** The routes of runs. A request goes to the first route that matches it: the answer to any other action on a run comes last. */
function runRoutes(api: Hono<Env>, ctx: ApiContext): void {
  listAndStartRoutes(api, ctx.client);
  readRoutes(api, ctx);
  controlRoutes(api, ctx);
}

/** GET /runs lists runs (by state, emergency stop, or the run they fork); POST /runs starts one. */
function listAndStartRoutes(api: Hono<Env>, tc: TetherClient): void {
  api.get('/runs', async (c) => {
    const estop = c.req.query('estop');
    if (estop !== undefined && estop !== 'true' && estop !== 'false') throw new HttpError(400, `estop must be "true" or "false", not "${estop.slice(0, 40)}"`);
    const emergencyStop = estop === undefined ? undefined : estop === 'true';
    const forkOf = c.req.query('forkOf');
    return c.json({ runs: await listRuns(tc, { state: c.req.query('state') || undefined, emergencyStop, ...(forkOf ? { forkOf: runIdOf(forkOf) } : {}) }) });
  });
  api.post('/runs', async (c) => {
    const { id, ...spec } = await jsonBody(c, startSchema, 'invalid RunSpec: ');
    // A relative path would be taken from the panel process's working directory: nothing the person at the browser can see.
    if (spec.workspace !== undefined && !spec.workspace.startsWith('/')) {
      throw new HttpError(400, `invalid RunSpec: workspace "${spec.workspace.slice(0, 80)}" must be an absolute path on the worker`);
    }
    const { runId } = await startRun(tc, spec, { id: id || undefined });
    return c.json({ runId }, 201);
  });
}

/** A run's status with its transcript and result, its timeline, and its live tokens. */
function readRoutes(api: Hono<Env>, ctx: ApiContext): void {
  const tc = ctx.client;
  api.get('/runs/:id', async (c) => {
    const runId = runIdOf(c.req.param('id'));
    const reading = await readRunStatus(tc, runId);
    const { status } = reading;
    const result = isTerminal(status.state) ? await waitForResult(tc, runId) : undefined;
    // An ended run's status and result need no worker; its transcript does, and its absence costs the transcript alone.
    const transcript = await readTranscript(tc, runId, reading).then(
      (messages) => ({ transcript: messages }),
      (err: Error) => {
        if (reading.closedExecution === null) throw err;
        return { transcript: null, transcriptError: err.message };
      },
    );
    return c.json({ status, ...transcript, ...(result ? { result } : {}) });
  });
  api.get('/runs/:id/timeline', async (c) => {
    const runId = runIdOf(c.req.param('id'));
    // The status first: it answers 404 for a workflow that is not a run, and its budget moves with approvals.
    const { status } = await readRunStatus(tc, runId);
    const { readTimeline } = await import('../history/read-timeline.js');
    return c.json({ ...(await readTimeline(tc.client, runId)), budgetUsd: status.budgetUsd ?? null });
  });
  api.get('/runs/:id/tokens', async (c) => {
    const runId = runIdOf(c.req.param('id'));
    // Before the stream opens: an unknown run is a 404, as on every other route of a run, not a stream that never ends.
    await describeRun(tc, runId);
    return ctx.tokens.subscribe(c, runId);
  });
}

/** The control messages a run takes, its fork, and the answer to any other action on it. */
function controlRoutes(api: Hono<Env>, ctx: ApiContext): void {
  const tc = ctx.client;
  for (const [action, name] of Object.entries(ACTIONS)) {
    api.post(`/runs/:id/${action}`, async (c) => {
      const runId = runIdOf(c.req.param('id'));
      const payload = await jsonBody(c, controlSchemas[name], `${name}: `);
      // Who sent it is the operator the token names, whatever the body claims.
      const status = await controlRun(tc, runId, name, { ...payload, audit: panelAudit(c.get('operator')) });
      ctx.hub.poke();
      return c.json(status);
    });
  }
  api.post('/runs/:id/fork', async (c) => {
    const runId = runIdOf(c.req.param('id'));
    const { step, steer, model, id } = await jsonBody(c, forkRequestSchema, 'fork: ');
    const fork = await forkRun(tc, runId, { step, steer: steer || undefined, model: model || undefined, id: id || undefined }, panelAudit(c.get('operator')));
    ctx.hub.poke();
    return c.json(fork, 201);
  });
  api.all('/runs/:id/:action', (c) => {
    if (c.req.param('action') in ACTIONS || c.req.param('action') === 'fork') throw new HttpError(405, 'use POST');
    throw new HttpError(404, 'no such action: use steer, extend, kill, estop, clear, approve, answer, decide or fork');
  });
}

function panelAudit(operator: string): Audit {
  return { by: operator, via: 'panel' };
}

/** The panel's JSON API (DESIGN.md "Panel HTTP API"), every route behind the token. */
export function apiRoutes(ctx: ApiContext): Hono<Env> {
  const api = new Hono<Env>();
  api.use(requireOperator(ctx.operators));
  // The rest of an oversized body is not read, so the connection cannot carry another request.
  api.use(bodyLimit({ maxSize: MAX_BODY, onError: (c) => c.json({ error: `request body over ${MAX_BODY} bytes` }, 413, { connection: 'close' }) }));
  api.get('/config', (c) => c.json({ temporalUiUrl: ctx.temporalUiUrl, namespace: ctx.client.namespace }));
  api.get('/events', (c) => {
    const run = c.req.query('run');
    return ctx.hub.subscribe(c, run ? runIdOf(run) : null);
  });
  api.post('/estop', async (c) => {
    const body = await jsonBody(c, fleetSchema);
    return c.json(await fleetEmergency(ctx.client, body.action, body.reason, panelAudit(c.get('operator'))));
  });
  runRoutes(api, ctx);
  // Answered, not thrown, so methodNotAllowed can still turn it into a 405 for a known path.
  api.all('*', (c) => c.json({ error: 'no such API route' }, 404));
  return api;
}
