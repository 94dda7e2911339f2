import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCodecServer, startLocalCodecServer } from '../src/ops/codec-server.js';
import { codecFromEnv, ENCRYPTED_ENCODING } from '../src/ops/codec.js';

const UI = 'http://localhost:8233';
const TOKEN = randomBytes(24).toString('hex');
const b64 = (s: string) => Buffer.from(s).toString('base64');
const plainPayload = { metadata: { encoding: b64('json/plain') }, data: b64('"a secret transcript"') };

describe('codec server', () => {
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const codec = codecFromEnv({ TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') })!;
    ({ url, close } = await startCodecServer({ port: 0, uiOrigin: UI, token: TOKEN, codec }));
  });
  afterAll(async () => close?.());

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const auth = { authorization: `Bearer ${TOKEN}` };

  it('encodes and decodes payloads in the Temporal codec-server JSON format', async () => {
    const encoded = await post('/encode', { payloads: [plainPayload] }, auth);
    expect(encoded.status).toBe(200);
    const { payloads } = (await encoded.json()) as { payloads: Array<{ metadata: Record<string, string>; data: string }> };
    expect(Buffer.from(payloads[0].metadata.encoding, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(payloads[0].data, 'base64').toString()).not.toContain('secret');
    const decoded = await post('/decode', { payloads }, auth);
    expect(await decoded.json()).toEqual({ payloads: [plainPayload] });
  });

  it('refuses a request without the token, or with a wrong one', async () => {
    expect((await post('/decode', { payloads: [plainPayload] })).status).toBe(401);
    expect((await post('/decode', { payloads: [plainPayload] }, { authorization: 'Bearer nope' })).status).toBe(401);
  });

  it('accepts the token as the first path segment, for a UI that cannot send headers', async () => {
    const response = await post(`/${TOKEN}/decode`, { payloads: [plainPayload] });
    expect(response.status).toBe(200);
  });

  it("answers CORS preflights only for the UI's origin", async () => {
    const ok = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: { origin: UI, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-namespace' },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI);
    expect(ok.headers.get('access-control-allow-headers')).toBe('content-type,authorization,x-namespace');
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');

    const evil = await fetch(`${url}/decode`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses a browser on another origin even with the token', async () => {
    const response = await post('/decode', { payloads: [plainPayload] }, { ...auth, origin: 'https://evil.example' });
    expect(response.status).toBe(403);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const fromUi = await post('/decode', { payloads: [plainPayload] }, { ...auth, origin: UI, 'x-namespace': 'default' });
    expect(fromUi.status).toBe(200);
    expect(fromUi.headers.get('access-control-allow-origin')).toBe(UI);
  });

  it('says what is wrong with a bad body or an unknown key id', async () => {
    expect((await post('/decode', { nope: true }, auth)).status).toBe(400);
    const foreign = { metadata: { encoding: b64(ENCRYPTED_ENCODING), 'encryption-key-id': b64('deadbeef') }, data: b64('x'.repeat(40)) };
    const response = await post('/decode', { payloads: [foreign] }, auth);
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/key deadbeef, which is not among the configured keys/);
  });

  it('refuses to start with an empty or short token, and says how to fix it', async () => {
    const codec = codecFromEnv({ TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') })!;
    await expect(startCodecServer({ port: 0, uiOrigin: UI, token: '', codec })).rejects.toThrow(/TETHER_CODEC_TOKEN is empty: set it to a long random value/);
    await expect(startCodecServer({ port: 0, uiOrigin: UI, token: 'abc123', codec })).rejects.toThrow(/TETHER_CODEC_TOKEN has 6 characters, fewer than the 24/);
  });

  it('answers an empty bearer token, or a malformed token in the path, with 401', async () => {
    for (const authorization of ['Bearer ', 'Bearer', '']) {
      expect((await post('/decode', { payloads: [plainPayload] }, { authorization })).status).toBe(401);
    }
    expect((await post('/%zz/decode', { payloads: [plainPayload] })).status).toBe(401);
  });
});

describe('codec server token when TETHER_CODEC_TOKEN is unset', () => {
  it('generates one, saves it readable only by its owner under TETHER_HOME, and keeps it across restarts', async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), 'tether-home-'));
    const codec = codecFromEnv({ TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') })!;
    const first = await startCodecServer({ port: 0, uiOrigin: UI, codec, env: { TETHER_HOME: home } });
    try {
      expect(first.token).toMatchObject({ source: 'generated', file: path.join(home, 'codec-token') });
      expect((await stat(path.join(home, 'codec-token'))).mode & 0o777).toBe(0o600);
      await first.close();
      const second = await startCodecServer({ port: 0, uiOrigin: UI, codec, env: { TETHER_HOME: home } });
      try {
        expect(second.token.token).toBe(first.token.token);
        const call = (authorization: string) =>
          fetch(`${second.url}/decode`, { method: 'POST', headers: { authorization }, body: JSON.stringify({ payloads: [plainPayload] }) });
        expect((await call(`Bearer ${first.token.token}`)).status).toBe(200);
        expect((await call('Bearer ')).status).toBe(401);
      } finally {
        await second.close();
      }
    } finally {
      await first.close();
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe('local codec server for tether server / tether dev', () => {
  it('refuses a TETHER_CODEC_TOKEN that is set but empty instead of running without one', async () => {
    await expect(
      startLocalCodecServer({ TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64'), TETHER_CODEC_TOKEN: '' }, { uiPort: 8233 }),
    ).rejects.toThrow(/TETHER_CODEC_TOKEN is empty/);
  });

  it('starts only with a key, and gives the UI an endpoint that carries its token', async () => {
    expect(await startLocalCodecServer({}, { uiPort: 8233 })).toBeNull();
    const local = (await startLocalCodecServer({ TETHER_ENCRYPTION_KEY: randomBytes(32).toString('base64') }, { uiPort: 8233 }))!;
    try {
      const response = await fetch(`${local.endpoint}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: 'http://127.0.0.1:8233' },
        body: JSON.stringify({ payloads: [plainPayload] }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8233');
      const withoutToken = await fetch(`${new URL(local.endpoint).origin}/decode`, { method: 'POST', body: JSON.stringify({ payloads: [] }) });
      expect(withoutToken.status).toBe(401);
    } finally {
      await local.close();
    }
  });
});
