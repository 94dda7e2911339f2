import { StringDecoder } from 'node:string_decoder';

/** The head and tail of a command's output, as text for the model; the middle of a huge output is not kept. */
export class OutputCapture {
  private readonly decoder = new StringDecoder('utf8');
  private head = '';
  private tailText = '';
  private chars = 0;
  bytes = 0;

  constructor(private readonly maxChars: number) {}

  add(chunk: Buffer): void {
    this.bytes += chunk.length;
    let text = this.decoder.write(chunk);
    this.chars += text.length;
    const keep = Math.ceil(this.maxChars / 2);
    if (this.head.length < keep) {
      const taken = text.slice(0, keep - this.head.length);
      this.head += taken;
      text = text.slice(taken.length);
    }
    if (text) this.tailText = (this.tailText + text).slice(-keep);
  }

  /** The last `n` characters seen (for heartbeats). */
  tail(n: number): string {
    return (this.head + this.tailText).slice(-n);
  }

  /** The captured text, with a marker where characters were left out and where the full output is. */
  result(where?: string): { output: string; truncated: boolean } {
    const omitted = this.chars - this.head.length - this.tailText.length;
    if (omitted <= 0) return { output: this.head + this.tailText, truncated: false };
    const note = where ? `; see ${where}` : '';
    return { output: `${this.head}\n… [${omitted} characters omitted${note}] …\n${this.tailText}`, truncated: true };
  }
}
