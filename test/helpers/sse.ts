import { sseFrames } from '../../src/client/sse-frames.js';

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

async function collect(body: ReadableStream<Uint8Array<ArrayBuffer>>, events: SseEvent[]): Promise<void> {
  for await (const { event, data } of sseFrames(body)) events.push({ event, data: JSON.parse(data) });
}
