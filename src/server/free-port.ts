import { createServer } from 'node:net';

/** Ports picked from here on: above the well-known ones, below the kernel's ephemeral range (Linux: 32768–60999). */
const LOWEST = 20_000;
const BELOW = 32_768;

/**
 * A port that was free a moment ago on 127.0.0.1. It is picked below the
 * ephemeral range on purpose: a port the kernel hands out for listen(0) may
 * be handed out again to any outgoing connection (a worker's to Temporal,
 * a client's) before whoever was given it binds it.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const candidate = LOWEST + Math.floor(Math.random() * (BELOW - LOWEST));
    if (await bindable(candidate)) return candidate;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
