/**
 * Payload encryption. Every payload Temporal stores (run inputs, results,
 * transcripts, signals, query answers, failure details) is sealed with
 * AES-256-GCM before it leaves the process, so the Temporal server and anyone
 * reading its database see ciphertext. Each payload names the key that sealed
 * it, so keys can be rotated: encrypt with the newest, decrypt with any listed.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { METADATA_ENCODING_KEY, type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { EncryptionKeyError, KEY_NOT_HELD, REFUSED_PAYLOAD } from '../api/payload-refusal.js';

const { Payload: PayloadMessage } = proto.temporal.api.common.v1;

/** The `encoding` of an encrypted payload. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata naming the key that sealed a payload. */
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const utf8 = new TextEncoder();
const text = new TextDecoder();

/** One AES-256 key and its public id (never the key itself). */
export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/** A key's id: the first 8 hex characters of its SHA-256, safe to print and to store beside the data. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/** Parses one base64 key; the message never repeats the value, which is a secret. */
export function parseKey(value: string, name: string): EncryptionKey {
  const trimmed = value.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) {
    throw new Error(`${name} is not base64: generate a key with \`openssl rand -base64 32\``);
  }
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== 32) {
    throw new Error(`${name} must be base64 of 32 bytes for AES-256, but it decodes to ${key.length}: generate one with \`openssl rand -base64 32\``);
  }
  return { id: keyId(key), key };
}

/**
 * How decode treats a payload it cannot open. A codec that throws inside a
 * worker fails the workflow task, and Temporal retries that task forever: one
 * plain or forged signal would wedge a run. So a worker's codec refuses instead:
 * it decodes such a payload into a value (`{ "<reason>": "refused" }`) that the
 * run's zod validation rejects with the reason, so a start fails with
 * InvalidRunSpec, a signal is logged and ignored, and an Update is rejected.
 */
export interface DecodePolicy {
  /** Turn unreadable payloads into refusals instead of errors; plaintext is refused too. */
  refuse: boolean;
  /** With `refuse`: let plaintext through (while runs started before encryption was on are still open). */
  acceptPlaintext?: boolean;
  /** With `refuse`: told of each refusal, so a worker can say in its log why its runs read nothing. */
  onRefusal?: (reason: string) => void;
}

const UNENCRYPTED = `unencrypted ${REFUSED_PAYLOAD}: encryption is on, so only payloads sealed with its key are accepted; send through a Tether client or the codec server`;

/** A JSON payload holding the refusal, in place of one that could not be opened. */
function refusal(reason: string): Payload {
  return { metadata: { [METADATA_ENCODING_KEY]: utf8.encode('json/plain') }, data: utf8.encode(JSON.stringify({ [reason]: 'refused' })) };
}

function isEncrypted(payload: Payload): boolean {
  const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
  return encoding !== undefined && encoding !== null && text.decode(encoding) === ENCRYPTED_ENCODING;
}

/**
 * An AES-256-GCM payload codec. The whole payload (metadata and data) is
 * serialised and sealed, so even its encoding is hidden; the key id is bound
 * as associated data so a payload cannot be relabelled to another key.
 */
export class EncryptionCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;

  /** `keys[0]` encrypts; every key decrypts. By default decode passes plaintext through and throws on what it cannot open. */
  constructor(
    readonly keys: EncryptionKey[],
    private readonly policy: DecodePolicy = { refuse: false },
  ) {
    if (keys.length === 0) throw new Error('an encryption codec needs at least one key');
    this.byId = new Map(keys.map(({ id, key }) => [id, key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.keys[0];
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(utf8.encode(id));
      const sealed = Buffer.concat([iv, cipher.update(PayloadMessage.encode(payload).finish()), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { [METADATA_ENCODING_KEY]: utf8.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8.encode(id) },
        data: sealed,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (!isEncrypted(payload)) {
        // Payloads written before encryption was turned on stay readable where the policy allows it.
        return this.policy.refuse && !this.policy.acceptPlaintext ? refusal(UNENCRYPTED) : payload;
      }
      if (!this.policy.refuse) return this.open(payload);
      try {
        return this.open(payload);
      } catch (err) {
        this.policy.onRefusal?.((err as Error).message);
        return refusal(`${REFUSED_PAYLOAD}: ${(err as Error).message}`);
      }
    });
  }

  private open(payload: Payload): Payload {
    const idBytes = payload.metadata?.[KEY_ID_METADATA];
    const id = idBytes ? text.decode(idBytes) : '(none)';
    const key = this.byId.get(id);
    if (!key) {
      throw new EncryptionKeyError(
        `payload was encrypted with key ${id}, ${KEY_NOT_HELD} (${[...this.byId.keys()].join(', ')}); ` +
          `add key ${id} to TETHER_ENCRYPTION_KEYS (a comma list; the key that seals new payloads first)`,
      );
    }
    const sealed = Buffer.from(payload.data ?? new Uint8Array());
    if (sealed.length < IV_BYTES + TAG_BYTES) throw new EncryptionKeyError(`encrypted payload (key ${id}) is truncated`);
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(utf8.encode(id));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new EncryptionKeyError(`encrypted payload (key ${id}) failed authentication: it was altered, or the key with this id is wrong`);
    }
    return PayloadMessage.decode(plain);
  }
}

/** The configured keys, newest first: `TETHER_ENCRYPTION_KEYS` (comma list) or `TETHER_ENCRYPTION_KEY`. */
export function keysFromEnv(env: NodeJS.ProcessEnv): EncryptionKey[] {
  const single = env.TETHER_ENCRYPTION_KEY?.trim();
  const list = env.TETHER_ENCRYPTION_KEYS?.split(',')
    .map((value) => value.trim())
    .filter(Boolean);
  if (list?.length) {
    const keys = list.map((value, i) => parseKey(value, `TETHER_ENCRYPTION_KEYS[${i}]`));
    // Two settings that disagree about the current key would encrypt with one and surprise the operator.
    if (single && parseKey(single, 'TETHER_ENCRYPTION_KEY').id !== keys[0].id) {
      throw new Error('TETHER_ENCRYPTION_KEY and TETHER_ENCRYPTION_KEYS disagree about the current key: set only TETHER_ENCRYPTION_KEYS, newest first');
    }
    return keys.filter((k, i) => keys.findIndex((other) => other.id === k.id) === i);
  }
  return single ? [parseKey(single, 'TETHER_ENCRYPTION_KEY')] : [];
}

/**
 * The encryption codec the environment asks for, or null when no key is set.
 * It passes plaintext through and throws on what it cannot open: for readers
 * that show what is stored (the codec server, doctor). Throws for a malformed key.
 */
export function codecFromEnv(env: NodeJS.ProcessEnv = process.env): EncryptionCodec | null {
  const keys = keysFromEnv(env);
  return keys.length ? new EncryptionCodec(keys) : null;
}

/**
 * A CommonJS module exporting a failure converter that moves error messages
 * and stack traces into an (encrypted) payload. It must be a path because the
 * SDK `require()`s it in the worker and bundles it into the workflow sandbox.
 */
export const FAILURE_CONVERTER_PATH = fileURLToPath(new URL('./failure-converter.cjs', import.meta.url));

/**
 * The codec of a process with no key: everything passes as it is, and an
 * encrypted payload is an error that says which key is missing and where to
 * set it (Temporal's own says "Unknown encoding: binary/encrypted"). A worker's
 * workflow task fails with it and is retried, so the run waits for a worker
 * that holds the key.
 */
export class MissingKeyCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    for (const payload of payloads) {
      if (!isEncrypted(payload)) continue;
      const id = payload.metadata?.[KEY_ID_METADATA];
      throw new EncryptionKeyError(
        `payload was encrypted with key ${id ? text.decode(id) : '(none)'}, ${KEY_NOT_HELD} (none is set here): ` +
          'set TETHER_ENCRYPTION_KEY (or TETHER_ENCRYPTION_KEYS) to the key the workers use',
      );
    }
    return payloads;
  }
}

/** Who reads with a converter: a worker (whose workflow tasks must not fail on a forged payload) or a client. */
export type ConverterRole = 'worker' | 'client';

/**
 * The data converter for workers, clients, the CLI, the panel and tests: the
 * encryption codec plus encrypted failure messages when a key is set. A
 * worker's codec refuses what it cannot open, plaintext included unless
 * TETHER_ENCRYPTION_ACCEPT_PLAINTEXT=1 (see DecodePolicy); a client's throws
 * (EncryptionKeyError), so a person is told which key is missing rather than
 * shown a refusal as data. With no key set, the MissingKeyCodec.
 */
export function dataConverterFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  role: ConverterRole = 'client',
  onRefusal?: (reason: string) => void,
): DataConverter {
  const keys = keysFromEnv(env);
  if (!keys.length) return { payloadCodecs: [new MissingKeyCodec()] };
  const acceptPlaintext = ['1', 'true'].includes(env.TETHER_ENCRYPTION_ACCEPT_PLAINTEXT ?? '');
  const policy: DecodePolicy = role === 'worker' ? { refuse: true, acceptPlaintext, onRefusal } : { refuse: false };
  return { payloadCodecs: [new EncryptionCodec(keys, policy)], failureConverterPath: FAILURE_CONVERTER_PATH };
}
