import { createServer, type Socket, connect } from 'node:net';

/**
 * A TCP proxy to the Temporal server that holds the server's answers once the
 * client has sent `afterClientBytes` bytes (a request larger than all before
 * it: a start with a large goal), until `release`. What the client does while
 * its request is on its way can then be tested at that moment, not by timing.
 */
export interface HoldingProxy {
  address: string;
  /** Resolves once answers are being held. */
  holding: Promise<void>;
  release(): void;
  close(): Promise<void>;
}

export async function startHoldingProxy(target: string, afterClientBytes: number): Promise<HoldingProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  let sent = 0;
  let held: Array<() => void> | null = null;
  let startHolding!: () => void;
  const holding = new Promise<void>((resolve) => (startHolding = resolve));
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (data) => {
      upstream.write(data);
      sent += data.length;
      if (held === null && sent >= afterClientBytes) {
        held = [];
        startHolding();
      }
    });
    upstream.on('data', (data) => (held ? held.push(() => client.write(data)) : client.write(data)));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${own}`,
    holding,
    release() {
      const queued = held ?? [];
      // Released for good: nothing is held again.
      held = null;
      sent = Number.NEGATIVE_INFINITY;
      for (const write of queued) write();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
