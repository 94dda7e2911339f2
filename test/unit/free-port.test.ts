import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../src/server/free-port.js';

describe('freePort', () => {
  it('picks a port below the ephemeral range that can be bound', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThanOrEqual(20_000);
    expect(port).toBeLessThan(32_768);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
