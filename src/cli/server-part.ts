import type { DevServer } from '../server/dev-server.js';
import type { Lifecycle } from './lifecycle.js';
import { note } from './output.js';

/**
 * Registers `server` as the lifecycle's "Temporal server" part. Returns what
 * settles when the server ends by itself (crashed, killed, out of memory)
 * rather than being stopped: that is said, with where its state is kept and
 * how to start it again, and the command exits 1. Without this, a worker left
 * behind would only log its failing polls.
 */
export async function addServerPart(life: Lifecycle, server: DevServer, command: string): Promise<{ endedByItself: Promise<void> }> {
  await life.add('Temporal server', 'server', server.stop, () => process.kill(server.pid, 'SIGKILL'));
  const endedByItself = server.exited.then(() => {
    if (life.stopRequested) return;
    const state = server.db ? `; its state is kept in ${server.db}` : '';
    note(
      `the Temporal server (pid ${server.pid}) ended by itself (${server.exitStatus()})${state}. Stopping everything; \`tether ${command}\` starts it again.`,
    );
    process.exitCode = 1;
    life.partEnded();
  });
  return { endedByItself };
}
