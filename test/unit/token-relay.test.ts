import { describe, expect, it } from 'vitest';
import type { TokenEvent } from '../../src/api/token-stream.js';
import { interruption, nextCall, type StreamingCall } from '../../src/client/token-follow.js';
import { READERS_PER_CALL } from '../../src/api/token-stream.js';
import { BACKLOG_CHARS, CallRelay, TokenQueue, TokenRelays } from '../../src/llm/token-relay.js';
import { startTokenServer } from '../../src/ops/token-server.js';
import { PageTokenQueue } from '../../src/panel/token-queue.js';

describe('a reader’s token queue', () => {
  it('coalesces the text that piles up while the reader is busy, and ends with the call', async () => {
    const queue = new TokenQueue(100);
    queue.push('Hel');
    queue.push('lo');
    expect(await queue.next()).toEqual([{ event: 'token', text: 'Hello' }]);
    queue.push('!');
    queue.end(true);
    expect(await queue.next()).toEqual([
      { event: 'token', text: '!' },
      { event: 'end', ok: true },
    ]);
    expect(await queue.next()).toBeNull();
  });

  it('never holds more than its limit for a slow reader: the rest is dropped and counted', async () => {
    const queue = new TokenQueue(10);
    queue.push('0123456789abc');
    queue.push('def');
    expect(await queue.next()).toEqual([
      { event: 'token', text: '0123456789' },
      { event: 'dropped', chars: 6 },
    ]);
    queue.push('ok');
    expect(await queue.next()).toEqual([{ event: 'token', text: 'ok' }]);
  });

  it('wakes a waiting reader when text arrives', async () => {
    const queue = new TokenQueue();
    const next = queue.next();
    queue.push('late');
    expect(await next).toEqual([{ event: 'token', text: 'late' }]);
  });
});

describe('a call’s relay', () => {
  it('gives a late reader the text so far, then what follows', async () => {
    const relay = new CallRelay();
    relay.push('early ');
    const joined = relay.subscribe()!;
    relay.push('late');
    expect(await joined.queue.next()).toEqual([{ event: 'token', text: 'early late' }]);
    relay.end(false);
    expect(await joined.queue.next()).toEqual([{ event: 'end', ok: false }]);
  });

  it('keeps a bounded backlog and tells a late reader how much it cannot have', async () => {
    const relay = new CallRelay();
    relay.push('x'.repeat(BACKLOG_CHARS + 5));
    const frames = (await relay.subscribe()!.queue.next())!;
    expect(frames.find((f) => f.event === 'dropped')).toEqual({ event: 'dropped', chars: 5 });
  });

  it('refuses readers beyond its limit, and a reader that leaves frees its place', () => {
    const relay = new CallRelay();
    const readers = Array.from({ length: READERS_PER_CALL }, () => relay.subscribe());
    expect(readers.every(Boolean)).toBe(true);
    expect(relay.subscribe()).toBeNull();
    readers[0]!.leave();
    expect(relay.subscribe()).not.toBeNull();
  });

  it('forgets a finished call: its capability then finds nothing', () => {
    const relays = new TokenRelays();
    const { capability, close } = relays.open();
    expect(capability).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(relays.get(capability)).toBeDefined();
    close(true);
    expect(relays.get(capability)).toBeUndefined();
    expect(relays.size).toBe(0);
  });
});

describe('following a run’s token streams', () => {
  const call = (url: string, attempt: number): StreamingCall => ({ ad: { url, step: 3 }, attempt, worker: '42@host' });

  it('reads each stream once, so the retried call is the next one', () => {
    expect(nextCall([call('a', 1)], new Set())).toEqual(call('a', 1));
    expect(nextCall([call('a', 1)], new Set(['a']))).toBeNull();
    expect(nextCall([call('b', 2)], new Set(['a']))).toEqual(call('b', 2));
  });

  it('names the lost worker and the attempt that comes next', () => {
    expect(interruption(call('a', 1))).toEqual({
      type: 'token_interrupted',
      step: 3,
      attempt: 1,
      worker: '42@host',
      message: 'token stream interrupted: worker 42@host lost; the call is being retried (attempt 2)',
    });
  });
});

describe('a page’s token queue', () => {
  const token = (text: string, attempt = 1): TokenEvent => ({ type: 'token', step: 1, attempt, text });

  it('merges tokens of one call, keeps other events in order', () => {
    const queue = new PageTokenQueue();
    queue.push(token('a'));
    queue.push(token('b'));
    queue.push({ type: 'token_end', step: 1, attempt: 1, ok: true });
    queue.push(token('c', 2));
    expect(queue.take()).toEqual([token('ab'), { type: 'token_end', step: 1, attempt: 1, ok: true }, token('c', 2)]);
    expect(queue.empty).toBe(true);
  });

  it('drops text past its limit and says how much', () => {
    const queue = new PageTokenQueue(4);
    queue.push(token('abcdef'));
    expect(queue.take()).toEqual([
      token('abcd'),
      { type: 'token_notice', step: 1, attempt: 1, message: '2 characters of the reply dropped: this page fell behind' },
    ]);
  });
});

describe('the worker’s token endpoint', () => {
  it('listens on loopback, streams a call under its capability to its end, and answers anything else with a bare 404', async () => {
    const relays = new TokenRelays();
    const server = await startTokenServer({ relays });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const { capability, relay, close } = relays.open();
      expect((await fetch(`${server.url}/tokens/${'x'.repeat(32)}`)).status).toBe(404);
      expect(await (await fetch(`${server.url}/metrics`)).text()).toBe('not found\n');
      relay.push('Hello, ');
      const response = await fetch(`${server.url}/tokens/${capability}`);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      relay.push('world');
      close(true);
      const body = await response.text();
      const frames = [...body.matchAll(/^event: (.*)\ndata: (.*)$/gm)].map(([, event, data]) => ({ event, ...JSON.parse(data!) }));
      expect(
        frames
          .filter((f) => f.event === 'token')
          .map((f) => f.text)
          .join(''),
      ).toBe('Hello, world');
      expect(frames.at(-1)).toEqual({ event: 'end', ok: true });
      expect((await fetch(`${server.url}/tokens/${capability}`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('turns a reader beyond the call’s limit away with a 429 that says so, not the 404 of a call that ended', async () => {
    const relays = new TokenRelays();
    const server = await startTokenServer({ relays });
    const { capability, close } = relays.open();
    const readers = new AbortController();
    try {
      for (let i = 0; i < READERS_PER_CALL; i++) expect((await fetch(`${server.url}/tokens/${capability}`, { signal: readers.signal })).status).toBe(200);
      const refused = await fetch(`${server.url}/tokens/${capability}`);
      expect([refused.status, await refused.text()]).toEqual([429, `this call has ${READERS_PER_CALL} readers already\n`]);
    } finally {
      readers.abort();
      close(true);
      await server.close();
    }
  });
});
