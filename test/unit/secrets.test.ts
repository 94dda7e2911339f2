import { describe, expect, it } from 'vitest';
import { createRedactor, findSecret, findSecretField, REDACTED, redactorFromEnv, secretValues } from '../../src/api/secrets.js';

const KEY = 'sk-live-Abc123"quoted\\slash';

describe('secret values', () => {
  it('takes secret-named variables, comma lists and URL passwords, and leaves flags and ordinary settings alone', () => {
    const values = secretValues({
      OPENAI_API_KEY: 'sk-one',
      TETHER_ENCRYPTION_KEYS: 'newkey==,oldkey==',
      DATABASE_URL: 'postgres://app:s3cret-pw@db:5432/x',
      GITHUB_PAT: 'ghp_abcdef',
      FEATURE_TOKEN_ENABLED: 'true',
      SHORT_TOKEN: 'abc',
      PATH: '/usr/bin',
      HOME: '/root',
    });
    expect(values).toEqual(expect.arrayContaining(['sk-one', 'newkey==', 'oldkey==', 's3cret-pw', 'ghp_abcdef']));
    expect(values).not.toContain('true');
    expect(values).not.toContain('abc');
    expect(values).not.toContain('/usr/bin');
    expect(values).not.toContain('/root');
  });
});

describe('credentials in addresses', () => {
  it("takes a provider base URL's user name, password and credential-named query values as secrets, and nothing else of it", () => {
    const values = secretValues({
      OPENAI_BASE_URL: 'http://sk-user-PLANTED-ffff@127.0.0.1:9/v1',
      ANTHROPIC_BASE_URL: 'https://gw.example/v1?x-api-key=sk-q-PLANTED-cccc&sig=sig-PLANTED-eeee&api-version=2024-02-01',
      OLLAMA_HOST: 'http://user:pw-PLANTED-1@ollama:11434',
      TEMPORAL_ADDRESS: 'localhost:7233',
      SOME_NOTE: 'http://not-an-address-name@example.com',
    });
    expect(values.sort()).toEqual(['pw-PLANTED-1', 'sig-PLANTED-eeee', 'sk-q-PLANTED-cccc', 'sk-user-PLANTED-ffff']);
  });

  it('redacts a URL whose user name alone is a key, and credential-named query values, with no known value', () => {
    const r = createRedactor([]);
    expect(r.text('failed: http://sk-user-abc@127.0.0.1:9/v1/chat')).toBe(`failed: http://${REDACTED}@127.0.0.1:9/v1/chat`);
    expect(r.text('GET /v1?x-api-key=abc123&sig=def456&api-version=2024-02-01')).toBe(`GET /v1?x-api-key=${REDACTED}&sig=${REDACTED}&api-version=2024-02-01`);
  });
});

describe('redactor', () => {
  it('gets through a megabyte of letters, as a model writing a big file sends (no quadratic backtracking on the event loop)', () => {
    const text = `${'x'.repeat(1_000_000)} https://user:pw@host`;
    expect(createRedactor(['sk-abcdefgh12345678']).text(text).endsWith(`https://${REDACTED}@host`)).toBe(true);
  });

  const redact = createRedactor([KEY, 'k3y!']);

  it('replaces a key as is, JSON-escaped, JSON-escaped twice and URL-encoded', () => {
    const once = JSON.stringify(KEY).slice(1, -1);
    const twice = JSON.stringify(once).slice(1, -1);
    for (const form of [KEY, once, twice, encodeURIComponent(KEY)]) {
      expect(redact.text(`before ${form} after`)).toBe(`before ${REDACTED} after`);
    }
  });

  it('replaces a key as a PHP-style JSON encoder writes it (every / as \\/), and URL-encoded in lowercase hex', () => {
    const key = 'AbC/dEf+GhI/jKl+MnO/pQr+StU/vWx-PLANTED=';
    const r = createRedactor([key]);
    const slashed = key.replaceAll('/', '\\/');
    expect(r.text(`{"error":{"message":"Incorrect API key provided: ${slashed}"}}`)).toBe(`{"error":{"message":"Incorrect API key provided: ${REDACTED}"}}`);
    expect(r.text(JSON.stringify({ body: `key ${slashed}` }))).not.toContain('PLANTED');
    const lowerHex = encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase());
    expect(lowerHex).toContain('%2f');
    expect(r.text(`?k=${lowerHex}`)).toBe(`?k=${REDACTED}`);
  });

  it('replaces a key inside base64 text, wherever it starts, in either alphabet, and refuses a spec that holds it so', () => {
    const key = 'sk-audit-Q7rT9xLm2Vb8Nc4Zp6Wd1Ys3';
    const r = createRedactor([key]);
    for (const before of ['', 'B', 'Bearer ', 'user:', '{"Authorization":"Bearer ']) {
      const encoded = Buffer.from(`${before}${key}" trailing`).toString('base64');
      for (const text of [encoded, encoded.replaceAll('+', '-').replaceAll('/', '_')]) {
        const redacted = r.text(`401: ${text} end`);
        expect(redacted).toContain(REDACTED);
        expect(Buffer.from(redacted, 'base64').toString('latin1')).not.toContain(key.slice(3, -3));
      }
    }
    expect(findSecret({ goal: `use ${Buffer.from(key).toString('base64')}` }, { OPENAI_API_KEY: key })).toBe('OPENAI_API_KEY');
    expect(r.text('aGVsbG8gd29ybGQ= plain words')).toBe('aGVsbG8gd29ybGQ= plain words');
  });

  it('replaces a key cut short, its start or its end, as a text cut at a limit before it was redacted carries it', () => {
    const key = 'sk-PROBE-SECRET-1234567890abcdef';
    const r = createRedactor([key]);
    expect(r.text(`Bad Request: ${'B'.repeat(40)}${key.slice(0, -1)}`)).toBe(`Bad Request: ${'B'.repeat(40)}${REDACTED}`);
    expect(r.text(`${key.slice(0, 16)}\n[reply text cut at 64000 characters]`)).toBe(`${REDACTED}\n[reply text cut at 64000 characters]`);
    expect(r.text(`…${key.slice(10)} and the rest of the output`)).toBe(`…${REDACTED} and the rest of the output`);
    // Less than half of it gives little away, and occurs by chance: left alone.
    expect(r.text(`${key.slice(0, 12)} is a prefix`)).toBe(`${key.slice(0, 12)} is a prefix`);
    expect(r.text('sk-proj and sk-PROBE are words')).toBe('sk-proj and sk-PROBE are words');
  });

  it("replaces a key written with JSON's \\u escapes, as a provider's error body quoted as is carries it", () => {
    const key = 'sk-PROBE-SECRET-1234567890abcdef';
    const r = createRedactor([key]);
    const escaped = `\\u0073k-PROBE-SECRET-1234567890\\u0061bcdef`;
    expect(r.text(`{"error":{"message":"bad key ${escaped}"}}`)).toBe(`{"error":{"message":"bad key ${REDACTED}"}}`);
    expect(r.text(`every char: ${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`).join('')}`)).toBe(
      `every char: ${REDACTED}`,
    );
  });

  it('catches short keys and keeps JSON valid', () => {
    const line = JSON.stringify({ msg: `invalid header value "Bearer k3y!" for ${KEY}` });
    const out = redact.text(line);
    expect(out).not.toContain('k3y!');
    expect(out).not.toContain('Abc123');
    expect(() => JSON.parse(out)).not.toThrow();
  });

  it('removes credentials from URLs, authorization headers and query strings it was never told about', () => {
    expect(redact.text('fetch https://user:hunter22@api.example.com/v1 failed')).toBe(`fetch https://${REDACTED}@api.example.com/v1 failed`);
    expect(redact.text('Authorization: Bearer abcdefghijkl')).toBe(`Authorization: Bearer ${REDACTED}`);
    expect(redact.text('GET /v1?api_key=zzzzzz&x=1')).toBe(`GET /v1?api_key=${REDACTED}&x=1`);
  });

  it('redacts every string of a value and leaves other values as they were', () => {
    const value = { text: `echo ${KEY}`, calls: [{ args: { command: `curl -H "x: ${KEY}"` } }], n: 3, ok: true, none: null };
    const out = redact.value(value);
    expect(JSON.stringify(out)).not.toContain('Abc123');
    expect(out.n).toBe(3);
    expect(out.ok).toBe(true);
    expect(out.none).toBeNull();
  });

  it('redacts an error, its details and its whole cause chain in place', () => {
    const cause = new Error(`connect failed for ${KEY}`);
    const error = Object.assign(new Error(`call failed: ${KEY}`, { cause }), { details: [{ header: KEY }] });
    redact.error(error);
    const all = `${error.message} ${error.stack} ${JSON.stringify(error.details)} ${cause.message} ${cause.stack}`;
    expect(all).not.toContain('Abc123');
  });

  it('builds from an environment', () => {
    expect(redactorFromEnv({ ANTHROPIC_API_KEY: 'ant-xyz-123' }).text('key ant-xyz-123')).toBe(`key ${REDACTED}`);
  });
});

describe('findSecret', () => {
  it('ignores values shorter than the given length, so a short password cannot refuse an innocent text', () => {
    const env = { ADMIN_PASSWORD: 'admin', OPENAI_API_KEY: 'sk-0123456789abcdef' };
    expect(findSecret('create the admin user', env, 12)).toBeNull();
    expect(findSecret({ system: 'use sk-0123456789abcdef' }, env, 12)).toBe('OPENAI_API_KEY');
  });

  it('names the variable whose value occurs in a value, in any rendering', () => {
    const env = { OPENAI_API_KEY: KEY, HOME: '/root' };
    expect(findSecret({ system: `use ${KEY}` }, env)).toBe('OPENAI_API_KEY');
    expect(findSecret({ system: 'no secret here, /root is fine' }, env)).toBeNull();
  });
});

describe('findSecretField', () => {
  const KEY = 'sk-live-abcdef0123456789';
  const env = { OPENAI_API_KEY: KEY, HOME: '/root' };

  it('names the field that holds a secret, and the variable, never the value', () => {
    expect(findSecretField({ goal: 'fine', system: `use ${KEY}` }, env)).toEqual({ field: 'system', variable: 'OPENAI_API_KEY' });
    expect(findSecretField({ limits: {}, verify: { command: `curl -H "x: ${KEY}"` } }, env)).toEqual({ field: 'verify.command', variable: 'OPENAI_API_KEY' });
    expect(findSecretField({ fallbackModels: ['openai:a', `openai:${KEY}`] }, env)).toEqual({ field: 'fallbackModels[1]', variable: 'OPENAI_API_KEY' });
  });

  it('finds escaped forms and passes a spec with no secret', () => {
    expect(findSecretField({ goal: JSON.stringify({ key: KEY }) }, env)?.field).toBe('goal');
    expect(findSecretField({ goal: 'no secret in /root' }, env)).toBeNull();
  });
});

describe('redacting a text that arrives in pieces', () => {
  const secret = 'sk-live-0123456789abcdefghij';
  const redactor = createRedactor([secret]);

  it('never releases a secret cut across pieces, and holds back only what could begin one', () => {
    const stream = redactor.stream();
    const released = [stream.push('the key is sk-li'), stream.push('ve-0123456789'), stream.push('abcdefghij, done'), stream.flush()];
    expect(released.join('')).toBe('the key is [redacted], done');
    expect(released[0]).toBe('the key is ');
    expect(released.some((piece) => piece.includes('sk-li'))).toBe(false);
  });

  it('never releases a key written with \\u escapes and cut across pieces, and releases a backslash that begins none', () => {
    const key = 'sk-test-PLANTED-openai-0123456789abcdefXYZ';
    const escaped = key.replaceAll('-', '\\u002d');
    const stream = createRedactor([key]).stream();
    const pieces = `Streaming: ${escaped} and the end.`.match(/.{1,2}/gs)!;
    const released = [...pieces.map((p) => stream.push(p)), stream.flush()];
    expect(released.join('')).toBe(`Streaming: ${REDACTED} and the end.`);
    expect(released.join('')).not.toContain('PLANTED');
    const plain = createRedactor([key]).stream();
    expect(plain.push('a path C:\\dir\\file and ')).toBe('a path C:\\dir\\file and ');
  });

  it('releases plain text at once, and a held prefix that turns out not to be a secret', () => {
    const stream = redactor.stream();
    expect(stream.push('hello ')).toBe('hello ');
    expect(stream.push('sk-')).toBe('');
    expect(stream.push('ip the rest')).toBe('sk-ip the rest');
    expect(stream.flush()).toBe('');
  });
});
