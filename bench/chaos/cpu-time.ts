/**
 * CPU time of processes, from Linux's /proc: what lets the load scenario say
 * where a run's CPU goes (the server, the worker, the worker's children) on a
 * machine whose cores are all busy, where wall-clock figures only say that
 * something is slow. Elsewhere every reading is null.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** /proc reports CPU in USER_HZ ticks, 100 a second on every Linux architecture Node runs on. */
const MS_PER_TICK = 10;

interface ProcStat {
  ppid: number;
  /** utime + stime: the process's own threads. */
  ownMs: number;
  /** cutime + cstime: its children that have ended and were waited for. */
  endedChildrenMs: number;
}

function procStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after its last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      ppid: Number(fields[1]),
      ownMs: (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK,
      endedChildrenMs: (Number(fields[13]) + Number(fields[14])) * MS_PER_TICK,
    };
  } catch {
    return null;
  }
}

/** CPU ms of one process's own threads, or null when it cannot be read. */
export function ownCpuMs(pid: number): number | null {
  return procStat(pid)?.ownMs ?? null;
}

/**
 * CPU ms of everything `pid` started, alive or ended (its own threads not
 * included): a long-lived helper such as the checkpoint runner, and the git
 * processes it has waited for.
 */
export function descendantsCpuMs(pid: number): number | null {
  const root = procStat(pid);
  if (!root) return null;
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const child = Number(entry);
    if (!Number.isInteger(child)) continue;
    const stat = procStat(child);
    if (stat) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), child]);
  }
  let total = root.endedChildrenMs;
  const pending = [...(children.get(pid) ?? [])];
  while (pending.length) {
    const next = pending.pop()!;
    const stat = procStat(next);
    if (!stat) continue;
    total += stat.ownMs + stat.endedChildrenMs;
    pending.push(...(children.get(next) ?? []));
  }
  return total;
}
