import { readdir, readFile, readlink } from 'node:fs/promises';

/*
 * Whether a port is listened on by a given process (or one it started), read
 * from Linux's /proc. A server answering on a port is not proof that it is
 * the one we started: another `tether` can bind the port in the moment
 * between our check and our server's own bind, and then our server exits
 * while the other answers for it.
 */

/** The inodes of the TCP sockets listening on `port` (any address, IPv4 or IPv6); null where /proc cannot say. */
async function listenerInodes(port: number): Promise<Set<string> | null> {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<string>();
  let readAny = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => null);
    if (text === null) continue;
    readAny = true;
    for (const line of text.split('\n').slice(1)) {
      // sl, local_address (hex ADDR:PORT), rem_address, st (0A = LISTEN), tx:rx, tr:when, retrnsmt, uid, timeout, inode
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(hexPort) && fields[3] === '0A') inodes.add(fields[9]);
    }
  }
  return readAny ? inodes : null;
}

/** `root` and every process it started, at any depth. */
async function processTree(root: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => null);
    // The command name may hold spaces and parentheses: the parent pid is the second field after its last ')'.
    const ppid = stat ? Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) : NaN;
    if (Number.isFinite(ppid)) parents.set(Number(entry), ppid);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** Whether `pid`, or a process it started, listens on `port`; null where /proc cannot say (not Linux). */
export async function listensOn(pid: number, port: number): Promise<boolean | null> {
  const inodes = await listenerInodes(port);
  if (inodes === null) return null;
  if (inodes.size === 0) return false;
  const holds = async (owner: number) => {
    for (const fd of await readdir(`/proc/${owner}/fd`).catch(() => [])) {
      const target = await readlink(`/proc/${owner}/fd/${fd}`).catch(() => '');
      if (target.startsWith('socket:[') && inodes.has(target.slice(8, -1))) return true;
    }
    return false;
  };
  if (await holds(pid)) return true;
  for (const descendant of (await processTree(pid)).slice(1)) if (await holds(descendant)) return true;
  return false;
}
