/** One frame of a Server-Sent Events stream: its `event:` name and its `data:` line, unparsed. */
export interface SseFrame {
  event: string;
  data: string;
}

/**
 * The frames of an event stream's body as they arrive, for the token
 * follower and the tests that read the panel's stream; a frame without an
 * event name or data is skipped. Stopping early cancels the body.
 */
export async function* sseFrames(body: ReadableStream<Uint8Array<ArrayBuffer>>): AsyncGenerator<SseFrame> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
        const text = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = /^event: (.*)$/m.exec(text)?.[1];
        const data = /^data: (.*)$/m.exec(text)?.[1];
        if (event && data) yield { event, data };
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
