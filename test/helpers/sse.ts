/** One Server-Sent Event as the panel sends it. */
export interface SseEvent {
  event: string;
  data: any;
}

/** An open event stream: what it has received so far, and how to hang up. */
export interface SseStream {
  status: number;
  headers: Headers;
  events: SseEvent[];
  close(): void;
}

/** Opens `url` with the bearer token and collects its events in the background, as the page does. */
export async function openEvents(url: string, token: string): Promise<SseStream> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  const events: SseEvent[] = [];
  if (response.ok && response.body) void collect(response.body, events).catch(() => undefined);
  return { status: response.status, headers: response.headers, events, close: () => controller.abort() };
}

async function collect(body: ReadableStream<Uint8Array>, events: SseEvent[]): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (event && data) events.push({ event, data: JSON.parse(data) });
    }
  }
}
