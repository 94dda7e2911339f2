import { describe, expect, it } from 'vitest';
import { sseFrames } from '../../src/client/sse-frames.js';

/** A live body (it never closes by itself) that has sent `chunks` as they are cut; `cancelled` settles when its reader cancels it. */
function body(chunks: string[]) {
  let cancel: () => void = () => {};
  const cancelled = new Promise<void>((resolve) => (cancel = resolve));
  const stream = new ReadableStream<Uint8Array<ArrayBuffer>>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
    },
    cancel,
  });
  return { stream, cancelled };
}

describe('sseFrames', () => {
  it('reads frames cut anywhere across chunks, and skips one without an event name or data', async () => {
    const { stream } = body(['event: token\nda', 'ta: {"text":"a"}\n', '\n: keep-alive\n\nevent: end\ndata: {"ok":true}\n\n']);
    const frames = [];
    for await (const frame of sseFrames(stream)) {
      frames.push(frame);
      if (frame.event === 'end') break;
    }
    expect(frames).toEqual([
      { event: 'token', data: '{"text":"a"}' },
      { event: 'end', data: '{"ok":true}' },
    ]);
  });

  it('cancels the body when its reader stops early', async () => {
    const { stream, cancelled } = body(['event: token\ndata: {}\n\n']);
    for await (const _frame of sseFrames(stream)) break;
    await cancelled;
  });
});
