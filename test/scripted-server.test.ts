import { mkdtempSync, rmSync, writeFileSync, utimesSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText, JSONParseError, streamText, tool } from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadScript, ScriptError, type Script } from '../src/scripted/script.js';
import { startScriptedServer, type ScriptedServer } from '../src/scripted/server.js';

const API_KEY = 'sk-test-never-recorded';

const SCRIPTS: Record<string, Script> = {
  hello: { steps: [{ reply: { text: 'Hello from the script, step {{step}}.' } }, { reply: { text: 'Second step.' } }] },
  tools: {
    steps: [
      {
        reply: {
          text: 'Running two things.',
          toolCalls: [
            { name: 'shell', args: { command: 'echo {{step}} {{run}}' } },
            { name: 'write_file', args: { path: 'a.txt', content: 'x' } },
          ],
        },
      },
    ],
  },
  raw: { steps: [{ reply: { toolCalls: [{ name: 'write_file', rawArguments: '{not json' }] } }] },
  empty: { steps: [{ reply: {} }], after: { text: 'Past the end at {{step}}.' } },
  short: { steps: [{ reply: { text: 'only one' } }] },
  loop: { steps: [{ reply: { text: 'first' } }, { reply: { toolCalls: [{ name: 'shell', args: { command: 'poll {{step}}' } }] }, repeat: 3 }] },
  usage: { steps: [{ reply: { text: 'counted', usage: { prompt: 100, completion: 20 } } }] },
  flaky: {
    steps: [
      {
        reply: { text: 'finally' },
        faults: [
          { kind: '429', retryAfterSec: 2 },
          { kind: '503', times: 2 },
        ],
      },
    ],
  },
  '429': { steps: [{ faults: [{ kind: '429', retryAfterSec: 7 }] }] },
  '500': { steps: [{ faults: [{ kind: '500' }] }] },
  '503': { steps: [{ faults: [{ kind: '503' }] }] },
  '400': { steps: [{ faults: [{ kind: '400' }] }] },
  '401': { steps: [{ faults: [{ kind: '401' }] }] },
  overflow: { steps: [{ faults: [{ kind: 'overflow' }] }] },
  hang: { steps: [{ faults: [{ kind: 'hang' }] }] },
  'hang-briefly': { steps: [{ faults: [{ kind: 'hang', ms: 50 }] }] },
  reset: { steps: [{ faults: [{ kind: 'reset' }] }] },
  malformed: { steps: [{ faults: [{ kind: 'malformed', times: 5 }] }] },
  slow: { steps: [{ reply: { text: 'worth the wait' }, faults: [{ kind: 'slow', ms: 150 }] }] },
  delayed: { steps: [{ reply: { text: 'late' }, delayMs: 100 }] },
  compactable: { steps: [{ reply: { toolCalls: [{ name: 'shell', args: { command: 'ls' } }] }, faults: [{ kind: '503' }] }] },
};

const tools = {
  shell: tool({ description: 'run a command', inputSchema: z.object({ command: z.string() }) }),
  write_file: tool({ description: 'write a file', inputSchema: z.object({ path: z.string(), content: z.string() }) }),
};

let server: ScriptedServer;
let runs = 0;
const newRun = () => `run-${++runs}`;

beforeAll(async () => {
  server = await startScriptedServer({ scripts: SCRIPTS });
});
afterAll(() => server?.close());
beforeEach(() => server.reset());

function model(script: string, srv = server) {
  return createOpenAICompatible({ name: 'scripted', baseURL: srv.url, apiKey: API_KEY, includeUsage: true }).chatModel(script);
}

function post(body: Record<string, unknown>, headers: Record<string, string> = {}, signal?: AbortSignal, srv = server) {
  return fetch(`${srv.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}`, ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'go' }], ...body }),
    signal,
  });
}

/** The JSON payloads of an SSE body, `[DONE]` kept as a string. */
async function events(res: Response): Promise<any[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((event) => event.replace(/^data: /, ''))
    .map((data) => (data === '[DONE]' ? data : JSON.parse(data)));
}

async function failureOf(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    () => expect.fail('expected the call to fail'),
    (err) => err,
  );
}

describe('replies', () => {
  it('answers a text step as a standard chat.completion over plain fetch', async () => {
    const res = await post({ model: 'hello' }, { 'x-tether-run': newRun() });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = await res.json();
    expect(body).toMatchObject({
      object: 'chat.completion',
      model: 'hello',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the script, step 0.' }, finish_reason: 'stop' }],
    });
    expect(body.choices[0].message.tool_calls).toBeUndefined();
  });

  it('answers text through the AI SDK with generateText and streamText', async () => {
    const generated = await generateText({ model: model('hello'), prompt: 'hi', maxRetries: 0 });
    expect(generated.text).toBe('Hello from the script, step 0.');
    expect(generated.finishReason).toBe('stop');

    const streamed = streamText({ model: model('hello'), prompt: 'hi', maxRetries: 0 });
    const deltas: string[] = [];
    for await (const part of streamed.fullStream) if (part.type === 'text-delta') deltas.push(part.text);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Hello from the script, step 0.');
  });

  it('delivers tool calls with parsed args when not streaming', async () => {
    const run = newRun();
    const result = await generateText({ model: model('tools'), prompt: 'hi', tools, maxRetries: 0, headers: { 'x-tether-run': run } });
    expect(result.text).toBe('Running two things.');
    expect(result.finishReason).toBe('tool-calls');
    expect(result.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input }))).toEqual([
      { id: `call_${run}_0_0`, name: 'shell', input: { command: `echo 0 ${run}` } },
      { id: `call_${run}_0_1`, name: 'write_file', input: { path: 'a.txt', content: 'x' } },
    ]);
  });

  it('streams tool calls that the AI SDK reassembles with parsed args', async () => {
    const run = newRun();
    const result = streamText({ model: model('tools'), prompt: 'hi', tools, maxRetries: 0, headers: { 'x-tether-run': run } });
    const calls = await result.toolCalls;
    expect(await result.text).toBe('Running two things.');
    expect(await result.finishReason).toBe('tool-calls');
    expect(calls.map((c) => [c.toolCallId, c.toolName, c.input])).toEqual([
      [`call_${run}_0_0`, 'shell', { command: `echo 0 ${run}` }],
      [`call_${run}_0_1`, 'write_file', { path: 'a.txt', content: 'x' }],
    ]);
  });

  it('streams the OpenAI chunk sequence: role, content, tool deltas, finish, usage, [DONE]', async () => {
    const res = await post({ model: 'tools', stream: true, stream_options: { include_usage: true } }, { 'x-tether-run': 'seq' });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const chunks = await events(res);
    expect(chunks.at(-1)).toBe('[DONE]');
    const objects = chunks.slice(0, -1);
    expect(objects.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(objects[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const toolDeltas = objects.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(toolDeltas[0]).toEqual({ index: 0, id: 'call_seq_0_0', type: 'function', function: { name: 'shell', arguments: '' } });
    const args = toolDeltas
      .filter((d) => d.index === 1)
      .map((d) => d.function.arguments)
      .join('');
    expect(JSON.parse(args)).toEqual({ path: 'a.txt', content: 'x' });
    expect(objects.at(-2).choices[0]).toMatchObject({ delta: {}, finish_reason: 'tool_calls' });
    expect(objects.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) } });
  });

  it('leaves the usage chunk out when the client did not ask for it', async () => {
    const chunks = await events(await post({ model: 'hello', stream: true }));
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
  });

  it('sends rawArguments verbatim, garbage included', async () => {
    const body = await (await post({ model: 'raw' })).json();
    expect(body.choices[0].message.tool_calls[0].function).toEqual({ name: 'write_file', arguments: '{not json' });
    const chunks = await events(await post({ model: 'raw', stream: true }));
    const args = chunks
      .flatMap((c) => c.choices?.[0]?.delta.tool_calls ?? [])
      .map((d: any) => d.function.arguments)
      .join('');
    expect(args).toBe('{not json');
  });

  it('replies with empty text when a step has neither text nor tool calls', async () => {
    const body = await (await post({ model: 'empty' })).json();
    expect(body.choices[0]).toMatchObject({ message: { content: '' }, finish_reason: 'stop' });
  });

  it('answers past the end with the script\'s after reply, else "All steps done."', async () => {
    const after = await (await post({ model: 'empty' }, { 'x-tether-step': '4' })).json();
    expect(after.choices[0].message.content).toBe('Past the end at 4.');
    const fallback = await (await post({ model: 'short' }, { 'x-tether-step': '1' })).json();
    expect(fallback.choices[0].message).toEqual({ role: 'assistant', content: 'All steps done.' });
  });

  it("reports the script's usage, streaming too with includeUsage", async () => {
    const generated = await generateText({ model: model('usage'), prompt: 'hi', maxRetries: 0 });
    expect(generated.usage).toMatchObject({ inputTokens: 100, outputTokens: 20, totalTokens: 120 });
    const streamed = streamText({ model: model('usage'), prompt: 'hi', maxRetries: 0 });
    expect(await streamed.usage).toMatchObject({ inputTokens: 100, outputTokens: 20, totalTokens: 120 });
  });

  it('estimates usage at about four characters a token when the script gives none', async () => {
    const prompt = 'x'.repeat(4_000);
    const result = await generateText({ model: model('hello'), prompt, maxRetries: 0 });
    expect(result.usage.inputTokens).toBeGreaterThanOrEqual(1_000);
    expect(result.usage.inputTokens).toBeLessThan(1_100);
    expect(result.usage.outputTokens).toBe(Math.ceil('Hello from the script, step 0.'.length / 4));
  });
});

describe('step selection', () => {
  it('takes the step from x-tether-step when present', async () => {
    const result = await generateText({ model: model('hello'), prompt: 'hi', maxRetries: 0, headers: { 'x-tether-step': '1' } });
    expect(result.text).toBe('Second step.');
  });

  it('otherwise counts the assistant messages in the conversation', async () => {
    const messages = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'again' },
    ];
    const body = await (await post({ model: 'hello', messages })).json();
    expect(body.choices[0].message.content).toBe('Second step.');
  });

  it('lets a repeated step stand for several indices and fills in {{step}} for each', async () => {
    const commands = [];
    for (const step of [1, 2, 3]) {
      const result = await generateText({ model: model('loop'), prompt: 'hi', tools, maxRetries: 0, headers: { 'x-tether-step': String(step) } });
      commands.push(result.toolCalls[0].input);
    }
    expect(commands).toEqual([{ command: 'poll 1' }, { command: 'poll 2' }, { command: 'poll 3' }]);
    const past = await generateText({ model: model('loop'), prompt: 'hi', tools, maxRetries: 0, headers: { 'x-tether-step': '4' } });
    expect(past.text).toBe('All steps done.');
  });

  it('rejects an x-tether-step that is not a non-negative integer', async () => {
    const res = await post({ model: 'hello' }, { 'x-tether-step': '-1' });
    expect(res.status).toBe(400);
    expect((await res.json()).error.type).toBe('invalid_request_error');
  });
});

describe('faults', () => {
  it('answers 429 with Retry-After and an OpenAI error body the AI SDK marks retryable', async () => {
    const res = await post({ model: '429' }, { 'x-tether-run': newRun() });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect((await res.json()).error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });

    const err = await failureOf(generateText({ model: model('429'), prompt: 'hi', maxRetries: 0, headers: { 'x-tether-run': newRun() } }));
    expect(APICallError.isInstance(err)).toBe(true);
    expect(err).toMatchObject({ statusCode: 429, isRetryable: true });
    expect(err.responseHeaders['retry-after']).toBe('7');
  });

  it('answers 500 and 503 as retryable server errors', async () => {
    for (const [script, status] of [
      ['500', 500],
      ['503', 503],
    ] as const) {
      const err = await failureOf(generateText({ model: model(script), prompt: 'hi', maxRetries: 0 }));
      expect(err).toMatchObject({ statusCode: status, isRetryable: true });
      expect(JSON.parse(err.responseBody).error.type).toBe('server_error');
    }
  });

  it('answers 400 and 401 as final client errors', async () => {
    const bad = await failureOf(generateText({ model: model('400'), prompt: 'hi', maxRetries: 0 }));
    expect(bad).toMatchObject({ statusCode: 400, isRetryable: false });
    const unauthorized = await failureOf(generateText({ model: model('401'), prompt: 'hi', maxRetries: 0 }));
    expect(unauthorized).toMatchObject({ statusCode: 401, isRetryable: false });
    expect(unauthorized.responseBody).not.toContain(API_KEY);
  });

  it('answers overflow with the exact OpenAI context_length_exceeded body', async () => {
    const res = await post({ model: 'overflow' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        message:
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    });
  });

  it('hangs until the client aborts the call', async () => {
    const started = Date.now();
    const err = await failureOf(generateText({ model: model('hang'), prompt: 'hi', maxRetries: 0, abortSignal: AbortSignal.timeout(150) }));
    expect(err.name).toMatch(/AbortError|TimeoutError/);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(server.requests.at(-1)).toMatchObject({ model: 'hang', fault: 'hang' });
  });

  it('frees the hanging socket as soon as the client goes away', async () => {
    const socket = connect(server.port, '127.0.0.1');
    const closedByServer = new Promise<void>((resolve) => socket.once('end', resolve));
    const body = JSON.stringify({ model: 'hang', messages: [{ role: 'user', content: 'raw' }] });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await expect.poll(() => server.requests.length).toBe(1);
    // Half-closing says "I am gone" while still letting us see the server close its end.
    socket.end();
    await closedByServer;
    socket.destroy();
  });

  it('drops a hanging connection by itself after ms when given', async () => {
    const err = await failureOf(post({ model: 'hang-briefly' }));
    expect(err).toBeInstanceOf(TypeError);
  });

  it('resets the connection so the client sees a network error', async () => {
    const viaFetch = await failureOf(post({ model: 'reset' }, { 'x-tether-run': newRun() }));
    expect(viaFetch).toBeInstanceOf(TypeError);
    const viaSdk = await failureOf(generateText({ model: model('reset'), prompt: 'hi', maxRetries: 0 }));
    expect(APICallError.isInstance(viaSdk)).toBe(true);
    expect(viaSdk.isRetryable).toBe(true);
  });

  it('sends a malformed body that the AI SDK fails to parse, streaming and not', async () => {
    const generated = await failureOf(generateText({ model: model('malformed'), prompt: 'hi', maxRetries: 0 }));
    expect(JSONParseError.isInstance(generated.cause)).toBe(true);

    const streamed = streamText({ model: model('malformed'), prompt: 'hi', maxRetries: 0, onError: () => {} });
    const errors = [];
    for await (const part of streamed.fullStream) if (part.type === 'error') errors.push(part.error);
    expect(JSONParseError.isInstance(errors[0])).toBe(true);
  });

  it('makes a slow attempt wait and then answer normally', async () => {
    const started = Date.now();
    const result = await generateText({ model: model('slow'), prompt: 'hi', maxRetries: 0 });
    expect(result.text).toBe('worth the wait');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(server.requests.at(-1)?.fault).toBe('slow');
  });

  it('waits delayMs before replying', async () => {
    const started = Date.now();
    expect((await generateText({ model: model('delayed'), prompt: 'hi', maxRetries: 0 })).text).toBe('late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
  });

  it('consumes one fault per attempt, times spanning attempts, then replies', async () => {
    const run = newRun();
    const call = () => post({ model: 'flaky' }, { 'x-tether-run': run, 'x-tether-step': '0' });
    const first = await call();
    expect([first.status, first.headers.get('retry-after')]).toEqual([429, '2']);
    expect((await call()).status).toBe(503);
    expect((await call()).status).toBe(503);
    const last = await call();
    expect((await last.json()).choices[0].message.content).toBe('finally');
    expect(server.requestsFor(run).map((r) => [r.attempt, r.fault])).toEqual([
      [1, '429'],
      [2, '503'],
      [3, '503'],
      [4, null],
    ]);
  });

  it('counts attempts per run, and reset() makes the faults fire again', async () => {
    const status = async (run: string) => (await post({ model: '503' }, { 'x-tether-run': run })).status;
    expect(await status('a')).toBe(503);
    expect(await status('b')).toBe(503);
    expect(await status('a')).toBe(200);
    server.reset();
    expect(await status('a')).toBe(503);
  });

  it('keys a run without x-tether-run by its first user message', async () => {
    const status = async (content: string) => (await post({ model: '503', messages: [{ role: 'user', content }] })).status;
    expect(await status('task one')).toBe(503);
    expect(await status('task two')).toBe(503);
    expect(await status('task one')).toBe(200);
  });

  it("answers a side request (x-tether-purpose) with a summary that spends none of the step's faults", async () => {
    const run = newRun();
    const side = await generateText({
      model: model('compactable'),
      prompt: 'summarise',
      maxRetries: 0,
      headers: { 'x-tether-run': run, 'x-tether-step': '0', 'x-tether-purpose': 'compaction' },
    });
    expect(side.text).toBe(`Scripted summary of run ${run} up to step 0.`);
    expect((await post({ model: 'compactable' }, { 'x-tether-run': run, 'x-tether-step': '0' })).status).toBe(503);
  });
});

describe('scripts', () => {
  it('answers an unknown script with an OpenAI-style 404 model_not_found', async () => {
    const res = await post({ model: 'no-such-script' });
    expect(res.status).toBe(404);
    expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found' });
    const err = await failureOf(generateText({ model: model('no-such-script'), prompt: 'hi', maxRetries: 0 }));
    expect(err).toMatchObject({ statusCode: 404, isRetryable: false });
  });

  it('loads scripts from the scenarios folder and lists them with /v1/models; /health answers', async () => {
    const run = newRun();
    const result = await generateText({ model: model('test-basic'), prompt: 'hi', tools, maxRetries: 0, headers: { 'x-tether-run': run } });
    expect(result.toolCalls[0].input).toEqual({ command: `echo step 0 of ${run}` });
    const ids = (await (await fetch(`${server.url}/models`)).json()).data.map((m: { id: string }) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['test-basic', 'hello', 'flaky']));
    expect((await fetch(`${server.url.replace(/\/v1$/, '')}/health`)).status).toBe(200);
  });

  it('re-reads a script file when it changes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-scripts-'));
    const own = await startScriptedServer({ scriptsDir: dir });
    try {
      const file = join(dir, 'edit.json');
      writeFileSync(file, JSON.stringify({ steps: [{ reply: { text: 'before' } }] }));
      const ask = async () => (await generateText({ model: model('edit', own), prompt: 'hi', maxRetries: 0 })).text;
      expect(await ask()).toBe('before');
      writeFileSync(file, JSON.stringify({ steps: [{ reply: { text: 'after!' } }] }));
      utimesSync(file, new Date(), new Date(Date.now() + 5_000));
      expect(await ask()).toBe('after!');
    } finally {
      await own.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the file and the field when a script is invalid', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-scripts-'));
    try {
      const file = join(dir, 'bad.json');
      writeFileSync(file, JSON.stringify({ steps: [{ reply: { text: 'ok' }, faults: [{ kind: '418' }] }] }));
      expect(() => loadScript(file)).toThrow(ScriptError);
      expect(() => loadScript(file)).toThrow(new RegExp(`${file.replace(/[.\\]/g, '\\$&')}.*steps\\[0\\]\\.faults\\[0\\]\\.kind`));
      writeFileSync(file, '{ "steps": [');
      expect(() => loadScript(file)).toThrow(/bad\.json: not JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects a body that is not JSON with a 400, and still records it', async () => {
    const res = await fetch(`${server.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' });
    expect(res.status).toBe(400);
    expect((await res.json()).error.type).toBe('invalid_request_error');
    expect(server.requests).toMatchObject([{ step: -1, attempt: 0, body: { raw: '{"model":' } }]);
  });

  it('refuses to start with an invalid in-memory script', async () => {
    await expect(startScriptedServer({ scripts: { broken: { steps: [{ repeat: 0 }] } } })).rejects.toThrow(/"broken".*steps\[0\]\.repeat/);
  });
});

describe('recording', () => {
  it('records every request in order, faults included, and never the API key', async () => {
    const run = newRun();
    await post({ model: 'flaky' }, { 'x-tether-run': run });
    await generateText({ model: model('hello'), prompt: 'hi', maxRetries: 0, headers: { 'x-tether-run': run, 'x-tether-step': '1' } });
    await streamText({ model: model('hello'), prompt: 'hi', maxRetries: 0 }).text;
    expect(server.requests.map((r) => [r.model, r.runId, r.step, r.attempt, r.stream, r.fault])).toEqual([
      ['flaky', run, 0, 1, false, '429'],
      ['hello', run, 1, 1, false, null],
      ['hello', null, 0, 1, true, null],
    ]);
    expect(server.requests[2].body.stream_options).toEqual({ include_usage: true });
    expect(server.requestsFor(run)).toHaveLength(2);
    expect(JSON.stringify(server.requests)).not.toContain(API_KEY);
  });

  it('close() ends hanging requests and returns promptly', async () => {
    const own = await startScriptedServer({ scripts: SCRIPTS });
    const pending = failureOf(post({ model: 'hang' }, {}, undefined, own));
    await expect.poll(() => own.requests.length).toBe(1);
    const started = Date.now();
    await own.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await pending).toBeInstanceOf(TypeError);
  });
});
