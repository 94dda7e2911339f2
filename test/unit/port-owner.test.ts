import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listensOn } from '../../src/server/port-owner.js';

const CHILD_LISTENS = `const s = require('node:net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port));`;

describe('listensOn', () => {
  it('knows the process that holds a port, a child of it, and one that does not', async () => {
    const own = createServer();
    await new Promise<void>((resolve) => own.listen(0, '127.0.0.1', resolve));
    const ownPort = (own.address() as { port: number }).port;
    const child = spawn(process.execPath, ['-e', CHILD_LISTENS], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const [line] = (await once(child.stdout!, 'data')) as [Buffer];
      const childPort = Number(line.toString().trim());
      expect(await listensOn(process.pid, ownPort)).toBe(true);
      // The child's port is held in this process's tree, and the child holds nothing of this process's.
      expect(await listensOn(process.pid, childPort)).toBe(true);
      expect(await listensOn(child.pid!, ownPort)).toBe(false);
      expect(await listensOn(child.pid!, childPort)).toBe(true);
    } finally {
      child.kill();
      own.close();
    }
    expect(await listensOn(process.pid, ownPort)).toBe(false);
  });
});
