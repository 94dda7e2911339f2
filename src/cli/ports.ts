import { connect, createServer } from 'node:net';
import { TetherError } from '../client/errors.js';
import { decimal } from './decimal.js';

/** A port a command is about to bind, and how the user chooses another. */
export interface PortClaim {
  port: number;
  host: string;
  /** Whose port it is, e.g. "the panel's". */
  owner: string;
  /** The flag that sets it, e.g. "--panel-port". */
  flag: string;
}

/** Why `port` cannot be bound on `host` right now (the error's code, e.g. EADDRINUSE), or null when it can. */
function bindProblem(port: number, host: string): Promise<string | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.unref();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'EADDRINUSE'));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/** Whether `port` can be bound on `host` right now. */
export async function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return (await bindProblem(port, host)) === null;
}

/** Codes of a host that is not an address of this machine (or not an address at all), where the port is not to blame. */
const NOT_HERE = new Set(['EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EINVAL']);

/** Whether something accepts TCP connections on host:port: a quick check, refused at once when nothing listens. */
export function listening(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The first free port after `port` that no other claim wants, to suggest in the message. */
async function nextFree(port: number, host: string, taken: Set<number>): Promise<number | null> {
  for (let candidate = port + 1; candidate < Math.min(port + 100, 65_536); candidate++) {
    if (!taken.has(candidate) && (await portFree(candidate, host))) return candidate;
  }
  return null;
}

/**
 * Checks every port a command will bind before it starts anything. A busy
 * one is reported with the way out (the flag, and a free port to pass it);
 * the command then exits having started nothing. Port 0 means "any" and is
 * never busy.
 */
export async function checkPorts(command: string, claims: PortClaim[]): Promise<void> {
  refuseSharedPorts(claims);
  const wanted = new Set(claims.map((c) => c.port));
  const problems: string[] = [];
  const ways: string[] = [];
  for (const claim of claims) {
    const problem = await bindProblem(claim.port, claim.host);
    if (problem === null) continue;
    if (NOT_HERE.has(problem)) {
      problems.push(
        `cannot listen on ${claim.host}:${claim.port} (${claim.owner} ${claim.flag}): ${claim.host} is not an address of this machine (${problem})`,
      );
      continue;
    }
    if (claim.port === 0) continue;
    const free = await nextFree(claim.port, claim.host, wanted);
    // Suggested once: the ports offered for several busy flags, taken together, must not clash with each other.
    if (free) {
      wanted.add(free);
      ways.push(`${claim.flag} ${free}`);
    }
    const wayOut = free ? `pick another: tether ${command} ${claim.flag} ${free}` : `pick another with ${claim.flag}`;
    problems.push(`port ${claim.port} is in use (${claim.owner} ${claim.flag}); ${wayOut}`);
  }
  if (ways.length > 1) problems.push(`all at once: tether ${command} ${ways.join(' ')}`);
  if (problems.length) throw new TetherError(problems.join('\n'), 'conflict');
}

/** Two flags given one port: the second listener would fail, and the first would be blamed as "already in use". */
function refuseSharedPorts(claims: PortClaim[]): void {
  for (const [i, claim] of claims.entries()) {
    const other = claims.slice(0, i).find((c) => c.port !== 0 && c.port === claim.port);
    if (other) throw new TetherError(`${other.flag} and ${claim.flag} are both ${claim.port}: give each its own port`, 'invalid');
  }
}

/** A port flag's value as a number, or a usage error naming the flag. */
export function portOption(value: string, flag: string): number {
  const port = decimal(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new TetherError(`invalid ${flag} "${value}": a port is 0 to 65535`, 'invalid');
  return port;
}

/** The ports of a local stack (`--port`, `--ui-port`, `--panel-port`), checked. */
export function stackPortOptions(opts: { port: string; uiPort: string; panelPort: string }): { port: number; uiPort: number; panelPort: number } {
  return { port: portOption(opts.port, '--port'), uiPort: portOption(opts.uiPort, '--ui-port'), panelPort: portOption(opts.panelPort, '--panel-port') };
}
