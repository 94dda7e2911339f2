import { readdir, readFile } from 'node:fs/promises';

/**
 * The Web UI of the Temporal dev server that already runs on this machine at
 * `port`, read from its own command line (`temporal server start-dev --port
 * P`, with `--ui-port U`, its default P + 1000, or `--headless`). Null when
 * no dev server here was started on that port (a cluster, another host) or
 * it runs without a UI: a stack that joins a server cannot assume the UI is
 * where it would have started its own.
 */
export async function runningDevServerUi(port: number): Promise<string | null> {
  const pids = (await readdir('/proc').catch(() => [])).filter((name) => /^\d+$/.test(name));
  for (const pid of pids) {
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (!args.includes('start-dev') || flagValue(args, '--port', '-p') !== String(port)) continue;
    if (args.includes('--headless')) return null;
    return `http://localhost:${flagValue(args, '--ui-port') ?? port + 1000}`;
  }
  return null;
}

/** A flag's value, given as `--flag value` or `--flag=value`. */
function flagValue(args: string[], ...flags: string[]): string | undefined {
  for (const [i, arg] of args.entries()) {
    if (flags.includes(arg)) return args[i + 1];
    const joined = flags.find((flag) => arg.startsWith(`${flag}=`));
    if (joined) return arg.slice(joined.length + 1);
  }
  return undefined;
}
