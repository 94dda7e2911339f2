import { open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { TetherError } from '../client/runs.js';
import { isProcessAlive } from '../tools/process-tree.js';

/**
 * Runs `work` holding `<dir>/up.lock`, so two `up`s on one directory cannot
 * both start a cluster there. A lock whose holder is gone is taken over.
 */
export async function withUpLock<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const lock = path.join(dir, 'up.lock');
  for (;;) {
    try {
      const handle = await open(lock, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(await readFile(lock, 'utf8').catch(() => '0'));
      if (holder > 0 && isProcessAlive(holder))
        throw new TetherError(`another \`tether cluster up\` (pid ${holder}) is starting a cluster in ${dir}`, 'conflict');
      await rm(lock, { force: true });
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { force: true });
  }
}
