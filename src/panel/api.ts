import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ControlName } from '../api/messages.js';
import { isTerminal } from '../api/types.js';
import { fleetEmergency } from '../client/fleet.js';
import { listRuns } from '../client/list.js';
import { controlRun, getStatus, getTranscript, startRun, TetherError, waitForResult, type TetherClient } from '../client/runs.js';
import type { EventHub } from './events.js';

/** An HTTP failure with the status to answer. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const ACTIONS: Record<string, ControlName> = {
  steer: 'steer',
  extend: 'extend',
  kill: 'kill',
  estop: 'emergencyStop',
  clear: 'clearEmergency',
  approve: 'approve',
  answer: 'answer',
};

const MAX_BODY = 1_000_000;

async function readJson(req: IncomingMessage): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, `request body over ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function fromTether(err: unknown): never {
  if (err instanceof TetherError) {
    const status = err.code === 'not_found' ? 404 : err.code === 'conflict' ? 409 : err.code === 'unreachable' ? 503 : 400;
    throw new HttpError(status, err.message);
  }
  throw err;
}

export interface ApiContext {
  client: TetherClient;
  hub: EventHub;
  temporalUiUrl: string;
}

/** The panel's JSON API (DESIGN.md "Panel HTTP API"). */
export async function handleApi(req: IncomingMessage, res: ServerResponse, url: URL, ctx: ApiContext): Promise<void> {
  const tc = ctx.client;
  const parts = url.pathname.split('/').filter(Boolean).slice(1).map(decodeURIComponent);
  const method = req.method ?? 'GET';
  const only = (allowed: string) => {
    if (method !== allowed) throw new HttpError(405, `use ${allowed}`);
  };
  try {
    if (parts[0] === 'config' && parts.length === 1) {
      only('GET');
      return send(res, 200, { temporalUiUrl: ctx.temporalUiUrl, namespace: tc.namespace });
    }
    if (parts[0] === 'events' && parts.length === 1) {
      only('GET');
      return ctx.hub.subscribe(req, res, url.searchParams.get('run'));
    }
    if (parts[0] === 'estop' && parts.length === 1) {
      only('POST');
      const body = (await readJson(req)) as { action?: string; reason?: string };
      if (body.action !== 'trip' && body.action !== 'clear') throw new HttpError(400, 'action must be "trip" or "clear"');
      if (body.reason !== undefined && typeof body.reason !== 'string') throw new HttpError(400, 'reason must be a string');
      return send(res, 200, await fleetEmergency(tc, body.action, body.reason || undefined));
    }
    if (parts[0] !== 'runs') throw new HttpError(404, 'no such API route');
    if (parts.length === 1) {
      if (method === 'GET') {
        const state = url.searchParams.get('state') || undefined;
        const estop = url.searchParams.get('estop');
        return send(res, 200, { runs: await listRuns(tc, { state, emergencyStop: estop === 'true' ? true : estop === 'false' ? false : undefined }) });
      }
      only('POST');
      const body = (await readJson(req)) as Record<string, unknown>;
      if (!body || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'body must be a RunSpec object');
      const { id, ...spec } = body;
      if (id !== undefined && typeof id !== 'string') throw new HttpError(400, 'id must be a string');
      const { runId } = await startRun(tc, spec, { id: id || undefined });
      return send(res, 201, { runId });
    }
    const runId = parts[1];
    if (parts.length === 2) {
      only('GET');
      const status = await getStatus(tc, runId);
      const transcript = await getTranscript(tc, runId);
      const result = isTerminal(status.state) ? await waitForResult(tc, runId) : undefined;
      return send(res, 200, { status, transcript, ...(result ? { result } : {}) });
    }
    const control = parts.length === 3 ? ACTIONS[parts[2]] : undefined;
    if (!control) throw new HttpError(404, 'no such action: use steer, extend, kill, estop, clear, approve or answer');
    only('POST');
    const status = await controlRun(tc, runId, control, await readJson(req));
    ctx.hub.poke();
    return send(res, 200, status);
  } catch (err) {
    fromTether(err);
  }
}
