/** In the reason of a payload a worker's codec refused; it arrives as `{ "<reason>": "refused" }` (src/ops/codec.ts). Its own module, so the codec (loaded by every client) does not load zod with the spec. */
export const REFUSED_PAYLOAD = 'payload refused';
