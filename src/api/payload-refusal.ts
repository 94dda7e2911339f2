/** In the reason of a payload a worker's codec refused; it arrives as `{ "<reason>": "refused" }` (src/ops/codec.ts). Its own module, so the codec (loaded by every client) does not load zod with the spec. */
export const REFUSED_PAYLOAD = 'payload refused';
/** In the reason of a payload sealed with a key this process lacks: a worker missing a key, not a forged payload, so a run start waits for a worker that has it. */
export const KEY_NOT_HELD = 'which is not among the configured keys';

/** A payload this process cannot open: sealed with a key it does not hold, with none, or altered. Says which key, never a key. */
export class EncryptionKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EncryptionKeyError';
  }
}
