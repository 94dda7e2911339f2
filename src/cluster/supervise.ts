import { clusterStatus } from './status.js';

/** How often a foreground `up` looks at its processes. */
const WATCH_MS = 2_000;

/**
 * For `up --foreground`: says when a part of the cluster stops running, and
 * keeps this process alive while it waits for a signal (the parts run in
 * sessions of their own and do not). Returns the function that stops watching.
 */
export function watchCluster(dir: string, say: (message: string) => void): () => void {
  const gone = new Set<string>();
  const timer = setInterval(async () => {
    const status = await clusterStatus(dir).catch(() => null);
    if (!status) return;
    const parts = [
      ...status.nodes.map((n) => [`Temporal ${n.name} (pid ${n.pid})`, n.running] as const),
      ['PostgreSQL', status.postgres?.running] as const,
      ...status.workers.map((w) => [`worker pid ${w.pid}`, w.running] as const),
      [`the Temporal UI (pid ${status.ui?.pid})`, status.ui?.running] as const,
      [`the panel (pid ${status.panel?.pid})`, status.panel?.running] as const,
      [`the frontend balancer (pid ${status.balancer?.pid})`, status.balancer?.running] as const,
    ];
    for (const [name, running] of parts) {
      if (running || gone.has(name)) continue;
      gone.add(name);
      say(`${name} is not running (logs in ${dir}/logs)`);
    }
  }, WATCH_MS);
  return () => clearInterval(timer);
}
