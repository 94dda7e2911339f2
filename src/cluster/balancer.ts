import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP balancer in front of the frontends: what a load balancer is to a real cluster. */
export interface Balancer {
  address: string;
  close(): Promise<void>;
}

/** A backend that refused a connection is skipped for this long before it is tried again. */
const BACKOFF_MS = 2_000;

function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

/** Listens on host:port (0 = any free port) and resolves with the port bound. */
async function listenOn(server: Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address();
  return typeof bound === 'object' && bound ? bound.port : port;
}

/**
 * Accepts connections on `listen` and pipes each to the next frontend that
 * answers, round-robin. The SDKs connect to one address; through this, a
 * client whose frontend died reconnects to a live one, so losing a node
 * costs in-flight calls (which the SDKs retry) and nothing more.
 */
export async function startBalancer(listen: string, backends: string[]): Promise<Balancer> {
  const downUntil = new Map<string, number>();
  let next = 0;
  const sockets = new Set<Socket>();

  const order = (): string[] => {
    const start = next++ % backends.length;
    const rotated = [...backends.slice(start), ...backends.slice(0, start)];
    const now = Date.now();
    // Backends that refused lately go last, not away: when every node is down the first to return is found.
    return [...rotated.filter((b) => (downUntil.get(b) ?? 0) <= now), ...rotated.filter((b) => (downUntil.get(b) ?? 0) > now)];
  };

  const dial = (candidates: string[], client: Socket): void => {
    const [backend, ...rest] = candidates;
    if (!backend || client.destroyed) return void client.destroy();
    const upstream = connect(splitAddress(backend));
    let connected = false;
    upstream.setNoDelay(true);
    upstream.once('connect', () => {
      connected = true;
      downUntil.delete(backend);
      sockets.add(upstream);
      client.pipe(upstream).pipe(client);
      // Either side ending ends both: an HTTP/2 client must see its frontend go to reconnect elsewhere.
      upstream.once('close', () => {
        sockets.delete(upstream);
        client.destroy();
      });
      client.once('close', () => upstream.destroy());
      client.resume();
    });
    upstream.on('error', () => {
      if (connected) return; // 'close' follows and ends the client
      downUntil.set(backend, Date.now() + BACKOFF_MS);
      dial(rest, client);
    });
  };

  const server = createServer({ pauseOnConnect: true }, (client) => {
    client.setNoDelay(true);
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    dial(order(), client);
  });
  const { host, port } = splitAddress(listen);
  const boundPort = await listenOn(server, host, port);
  return {
    address: `${host}:${boundPort}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
