/**
 * Models whose server garbled a streamed reply and then answered the same
 * request asked whole (some proxies answer `stream: true` with plain JSON,
 * some streams never say how they finished). Each new call would stream
 * again, fail, and pay for a second request, so such a model is asked whole
 * for a while, then streamed again in case the server was fixed.
 */
export class WholeReplyModels {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly forMs = 10 * 60_000,
    private readonly max = 1_000,
  ) {}

  /** Whether a call to `model` at `nowMs` should ask for the whole reply rather than a stream. */
  prefersWhole(model: string, nowMs: number): boolean {
    const until = this.until.get(model);
    if (until === undefined) return false;
    if (until > nowMs) return true;
    this.until.delete(model);
    return false;
  }

  /** `model` answered whole after a garbled stream. */
  remember(model: string, nowMs: number): void {
    this.until.delete(model);
    this.until.set(model, nowMs + this.forMs);
    if (this.until.size > this.max) this.until.delete(this.until.keys().next().value!);
  }
}
