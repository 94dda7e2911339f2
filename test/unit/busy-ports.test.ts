import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkPorts } from '../../src/cli/ports.js';
import { freePort } from '../../src/server/free-port.js';

const held: Server[] = [];
const hold = (port: number) =>
  new Promise<void>((resolve) => {
    const server = createServer();
    held.push(server);
    server.listen(port, '127.0.0.1', () => resolve());
  });

describe('busy ports', () => {
  afterEach(() => {
    for (const server of held.splice(0)) server.close();
  });

  it('offer each busy flag a port of its own, and all of them in one command that would start', async () => {
    const base = await freePort();
    await hold(base);
    await hold(base + 1);
    const claims = [
      { port: base, host: '127.0.0.1', owner: "Temporal's", flag: '--port' },
      { port: base + 1, host: '127.0.0.1', owner: "the Temporal UI's", flag: '--ui-port' },
    ];
    const error = await checkPorts('dev', claims).then(
      () => null,
      (err: Error) => err,
    );
    const lines = error?.message.split('\n') ?? [];
    const offered = lines.slice(0, 2).map((line) => Number(line.match(/ (\d+)$/)?.[1]));
    expect(lines[0]).toMatch(/^port \d+ is in use \(Temporal's --port\); pick another: tether dev --port \d+$/);
    expect(new Set(offered).size).toBe(2);
    expect(offered.every((port) => port > base + 1)).toBe(true);
    expect(lines[2]).toBe(`all at once: tether dev --port ${offered[0]} --ui-port ${offered[1]}`);
  });
});
