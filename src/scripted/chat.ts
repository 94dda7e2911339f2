import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject, isFailure } from './faults.js';
import { header, JSON_HEADERS, pause, SSE_HEADERS, sendError } from './http.js';
import {
  afterReply,
  createScriptCatalog,
  faultFor,
  renderReply,
  ScriptError,
  stepAt,
  type LoadedScript,
  type RenderedReply,
  type Script,
  type ScriptReply,
} from './script.js';
import { completionJson, completionSse, type CompletionMeta } from './sse.js';

/** One request as the server saw it (never its headers, so no API key is kept). */
export interface RecordedRequest {
  at: number;
  /** The `x-tether-run` header; null when the client sent none. */
  runId: string | null;
  /** The step index, or -1 when the request was rejected before one could be read. */
  step: number;
  /** 1-based attempt of this (script, run, step); 0 when no script answered. */
  attempt: number;
  model: string;
  stream: boolean;
  /** The request body as JSON (`{ raw }` when it is not JSON). */
  body: ChatRequestBody;
  fault: string | null;
}

/** The fields of a Chat Completions request that the server reads; the rest is kept as sent. */
export interface ChatRequestBody {
  model?: unknown;
  messages?: Array<{ role?: string; content?: unknown }>;
  stream?: unknown;
  stream_options?: { include_usage?: unknown };
  [field: string]: unknown;
}

const MAX_RECORDED = 10_000;
// Attempt counters of long-finished steps are dead weight in a long benchmark.
const MAX_TRACKED_STEPS = 100_000;
// A side request (e.g. a compaction summary) shares the step header of the call it serves;
// it must neither eat that step's faults nor get its tool calls.
const SIDE_REPLY: ScriptReply = { text: 'Scripted summary of run {{run}} up to step {{step}}.' };

/** Where a reply goes and what it answers. */
interface ReplyTarget {
  model: string;
  run: string;
  step: number;
  stream: boolean;
  raw: string;
  includeUsage: boolean;
}

/** A request read as far as the scripts care: which model (script), which step, which conversation. */
interface ChatRequest {
  base: Omit<RecordedRequest, 'attempt' | 'fault'>;
  body: ChatRequestBody | undefined;
  stepHeader: string | null;
  raw: string;
}

/**
 * Answers Chat Completions requests from scripts: picks the script by model,
 * the step by header, counts attempts per (script, run, step, purpose) so
 * faults fire the given number of times, and records every request.
 */
export class ScriptedChat {
  readonly requests: RecordedRequest[] = [];
  private readonly attempts = new Map<string, number>();
  private completions = 0;
  readonly catalog: ReturnType<typeof createScriptCatalog>;

  constructor(scriptsDir: string, scripts: Record<string, Script>) {
    this.catalog = createScriptCatalog(scriptsDir, scripts);
  }

  /** Forgets recorded requests and attempt counts, so faults fire again. */
  reset(): void {
    this.requests.length = 0;
    this.attempts.clear();
  }

  async answer(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    const request = readRequest(req, raw);
    const { base, body } = request;
    const script = this.scriptFor(request, res);
    if (!script || !body) return;
    const run = base.runId ?? conversationKey(body.messages);
    const purpose = header(req, 'x-tether-purpose');
    const attempt = this.nextAttempt(`${base.model}\0${run}\0${base.step}\0${purpose ?? ''}`);
    const scripted = stepAt(script, base.step);
    const side = purpose === 'compaction' ? script.compaction : undefined;
    const fault = purpose === null ? (scripted ? faultFor(scripted.faults, attempt) : null) : side ? faultFor(side.faults, attempt) : null;
    this.record({ ...base, attempt, fault: fault?.kind ?? null });
    if (fault && isFailure(fault)) return inject(fault, req, res, base.stream);
    const trickleMs = fault?.kind === 'trickle' ? (fault.ms ?? 0) : 0;
    const wait = (trickleMs ? 0 : (fault?.ms ?? 0)) + (purpose === null ? (scripted?.delayMs ?? 0) : 0);
    if (wait > 0 && !(await pause(wait, res))) return;
    const reply = renderReply(purpose !== null ? (side?.reply ?? SIDE_REPLY) : scripted ? scripted.reply : afterReply(script), { step: base.step, run });
    const at = { model: base.model, run, step: base.step, stream: base.stream, raw, includeUsage: body.stream_options?.include_usage === true };
    if (trickleMs && base.stream) return this.trickle(res, reply, at, trickleMs);
    if (trickleMs && !(await pause(trickleMs, res))) return;
    this.reply(res, reply, at);
  }

  /** Sends the stream one event at a time, spread over `ms`: a provider that is slow but alive. */
  private async trickle(res: ServerResponse, reply: RenderedReply, at: ReplyTarget, ms: number): Promise<void> {
    const events = completionSse(reply, this.meta(reply, at), at.includeUsage).split(/(?<=\n\n)/);
    res.writeHead(200, SSE_HEADERS);
    for (const event of events) {
      if (!(await pause(ms / events.length, res))) return;
      res.write(event);
    }
    res.end();
  }

  /** The script that answers the request, or null after refusing it (bad JSON, bad step, no such script). */
  private scriptFor({ base, body, stepHeader }: ChatRequest, res: ServerResponse): LoadedScript | null {
    const refuse = (status: number, message: string, code: string | null) => {
      this.record({ ...base, attempt: 0, fault: null });
      sendError(res, status, message, 'invalid_request_error', code);
      return null;
    };
    if (body === undefined) return refuse(400, 'We could not parse the JSON body of your request.', null);
    if (base.step < 0) return refuse(400, `x-tether-step must be a non-negative integer, got "${stepHeader}"`, null);
    let script: LoadedScript | null;
    try {
      script = this.catalog.get(base.model);
    } catch (err) {
      if (err instanceof ScriptError) return refuse(400, err.message, 'invalid_script');
      throw err;
    }
    if (!script) return refuse(404, `The model \`${base.model}\` does not exist: no such script.`, 'model_not_found');
    return script;
  }

  private meta(reply: RenderedReply, at: ReplyTarget): CompletionMeta {
    return {
      id: `chatcmpl-${++this.completions}`,
      created: Math.floor(Date.now() / 1000),
      model: at.model,
      callIdPrefix: `call_${at.run}_${at.step}`,
      usage: usageOf(reply, at.raw.length),
    };
  }

  private reply(res: ServerResponse, reply: RenderedReply, at: ReplyTarget): void {
    const meta = this.meta(reply, at);
    if (at.stream) res.writeHead(200, SSE_HEADERS).end(completionSse(reply, meta, at.includeUsage));
    else res.writeHead(200, JSON_HEADERS).end(completionJson(reply, meta));
  }

  private record(entry: RecordedRequest): void {
    this.requests.push(entry);
    if (this.requests.length > MAX_RECORDED) this.requests.shift();
  }

  private nextAttempt(key: string): number {
    const attempt = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, attempt);
    if (this.attempts.size > MAX_TRACKED_STEPS) this.attempts.delete(this.attempts.keys().next().value!);
    return attempt;
  }
}

/** Reads model, step and run from a request: the step from `x-tether-step`, else the count of assistant messages. */
function readRequest(req: IncomingMessage, raw: string): ChatRequest {
  const body = parseJson(raw);
  const stepHeader = header(req, 'x-tether-step');
  const step = body === undefined ? -1 : stepHeader === null ? assistantCount(body.messages) : /^\d+$/.test(stepHeader) ? Number(stepHeader) : -1;
  const model = typeof body?.model === 'string' ? body.model : '';
  const base = { at: Date.now(), runId: header(req, 'x-tether-run'), model, stream: body?.stream === true, body: body ?? { raw }, step };
  return { base, body, stepHeader, raw };
}

/** The parsed body, or undefined when it is not JSON. */
function parseJson(raw: string): ChatRequestBody | undefined {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

function assistantCount(messages: unknown): number {
  return Array.isArray(messages) ? messages.filter((m) => m?.role === 'assistant').length : 0;
}

/** Names a conversation that carries no run id by its first user message, which stays fixed as it grows. */
function conversationKey(messages: unknown): string {
  const first = Array.isArray(messages) ? messages.find((m) => m?.role === 'user') : undefined;
  const content = typeof first?.content === 'string' ? first.content : JSON.stringify(first?.content ?? '');
  return createHash('sha256').update(content).digest('hex').slice(0, 12);
}

/** The script's usage, else an estimate of about four characters a token. */
function usageOf(reply: RenderedReply, requestChars: number): CompletionMeta['usage'] {
  const replyChars = reply.text.length + reply.toolCalls.reduce((n, call) => n + call.name.length + call.arguments.length, 0);
  const prompt = reply.usage?.prompt ?? Math.max(1, Math.ceil(requestChars / 4));
  const completion = reply.usage?.completion ?? Math.max(1, Math.ceil(replyChars / 4));
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
