import net from 'node:net';

/** Long enough for a TCP handshake across the world; past it, a silent address is left to gRPC and its own deadline. */
const PROBE_MS = 1_000;

/**
 * Fails at once when nothing listens at a `host:port` address. gRPC retries
 * a refused connection until its deadline (seconds, generous for a distant
 * server), so a server that is simply not running would be reported late; a
 * TCP connection refused, or a host name that does not resolve, is final. A
 * connection accepted, or no answer within a second, resolves: gRPC decides.
 */
export function probeTcp(address: string): Promise<void> {
  const { host, port } = splitAddress(address);
  // An address gRPC reads and we do not (a scheme, a path) is left to gRPC.
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const done = (err?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(done, PROBE_MS);
    socket.once('connect', () => done());
    socket.once('error', done);
  });
}

/** `host:port`, `[::1]:7233`; a missing port is Temporal's default. */
export function splitAddress(address: string): { host: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(address);
  if (bracketed) return { host: bracketed[1]!, port: Number(bracketed[2] ?? 7233) };
  const colon = address.lastIndexOf(':');
  if (colon < 0) return { host: address, port: 7233 };
  return { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
}
