import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type Balancer, startBalancer } from '../../src/cluster/balancer.js';

/** A backend that answers every connection with its name, then echoes. */
async function backend(name: string): Promise<{ address: string; server: Server; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.write(`${name}\n`);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { address: `127.0.0.1:${port}`, server, sockets };
}

/** Connects through the balancer and resolves with the socket and the first line it reads. */
function dialThrough(balancer: Balancer): Promise<{ socket: Socket; greeting: string }> {
  const [host, port] = balancer.address.split(':');
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port: Number(port) });
    socket.once('error', reject);
    socket.once('data', (data) => resolve({ socket, greeting: data.toString().trim() }));
  });
}

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0)) await fn();
});

describe('the frontend balancer', () => {
  it('spreads connections over the frontends in turn', async () => {
    const [a, b] = await Promise.all([backend('a'), backend('b')]);
    const balancer = await startBalancer('127.0.0.1:0', [a.address, b.address]);
    cleanup.push(
      () => balancer.close(),
      () => a.server.close(),
      () => b.server.close(),
    );
    const greetings = [];
    for (let i = 0; i < 4; i++) {
      const { socket, greeting } = await dialThrough(balancer);
      greetings.push(greeting);
      socket.destroy();
    }
    expect(greetings).toEqual(['a', 'b', 'a', 'b']);
  });

  it('sends every new connection to a live frontend when one is gone', async () => {
    const [a, b] = await Promise.all([backend('a'), backend('b')]);
    const balancer = await startBalancer('127.0.0.1:0', [a.address, b.address]);
    cleanup.push(
      () => balancer.close(),
      () => b.server.close(),
    );
    await new Promise<void>((resolve) => a.server.close(() => resolve()));
    const greetings = [];
    for (let i = 0; i < 3; i++) {
      const { socket, greeting } = await dialThrough(balancer);
      greetings.push(greeting);
      socket.destroy();
    }
    expect(greetings).toEqual(['b', 'b', 'b']);
  });

  it("closes a client's connection when its frontend dies, so the client reconnects elsewhere", async () => {
    const [a, b] = await Promise.all([backend('a'), backend('b')]);
    const balancer = await startBalancer('127.0.0.1:0', [a.address, b.address]);
    cleanup.push(
      () => balancer.close(),
      () => b.server.close(),
    );
    const { socket, greeting } = await dialThrough(balancer);
    expect(greeting).toBe('a');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    a.server.close();
    for (const s of a.sockets) s.destroy();
    await closed;
    const again = await dialThrough(balancer);
    expect(again.greeting).toBe('b');
    again.socket.destroy();
  });

  it('passes bytes both ways unchanged', async () => {
    const a = await backend('a');
    const balancer = await startBalancer('127.0.0.1:0', [a.address]);
    cleanup.push(
      () => balancer.close(),
      () => a.server.close(),
    );
    const { socket } = await dialThrough(balancer);
    const payload = Buffer.from(Array.from({ length: 100_000 }, (_, i) => i % 251));
    const echoed = new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      socket.on('data', (d) => {
        chunks.push(d);
        if (Buffer.concat(chunks).length >= payload.length) resolve(Buffer.concat(chunks));
      });
    });
    socket.write(payload);
    expect((await echoed).equals(payload)).toBe(true);
    socket.destroy();
  });
});
