import { readFile, rm, writeFile } from 'node:fs/promises';

/*
 * Which Temporal server works on a SQLite state file. The dev server does
 * not lock its database: a second one started on the same file (a second
 * `tether dev` on other ports, with the same TETHER_HOME) would write to it
 * too. Each server Tether starts leaves its pid and address beside the file,
 * and a start finds a live one there first.
 */

export interface StateHolder {
  pid: number;
  address: string;
}

const claimFile = (db: string) => `${db}.server.json`;

/** The live server that claimed `db`: its pid still runs a command naming the file (a pid reused by another process does not count). */
export async function stateHolder(db: string): Promise<StateHolder | null> {
  const claim = await readClaim(db);
  if (!claim || typeof claim.pid !== 'number' || typeof claim.address !== 'string') return null;
  const command = await readFile(`/proc/${claim.pid}/cmdline`, 'utf8').catch(() => '');
  return command.includes(db) ? { pid: claim.pid, address: claim.address } : null;
}

export function claimState(db: string, holder: StateHolder): Promise<void> {
  return writeFile(claimFile(db), JSON.stringify(holder));
}

/** Gives the claim up, if it is still `pid`'s. */
export async function releaseState(db: string, pid: number): Promise<void> {
  if ((await readClaim(db))?.pid === pid) await rm(claimFile(db), { force: true });
}

/** The claim as written, or null when there is none or it does not parse. */
function readClaim(db: string): Promise<Partial<StateHolder> | null> {
  return readFile(claimFile(db), 'utf8')
    .then((text) => JSON.parse(text) as Partial<StateHolder>)
    .catch(() => null);
}
