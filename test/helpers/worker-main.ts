// A worker in its own process, so tests can SIGKILL or SIGTERM it like a real crash or shutdown.
import { createTetherWorker } from '../../src/worker.js';

const { worker, connection } = await createTetherWorker({
  workspaceRoot: process.env.TETHER_TEST_WORKSPACES,
  shutdownGraceMs: Number(process.env.TETHER_TEST_GRACE_MS ?? 30_000),
});
process.stdout.write('worker-ready\n');
await worker.run();
// The SDK runtime (and the log forwarding it holds open) shuts down with its last connection.
await connection.close();
process.stdout.write('worker-stopped\n');
