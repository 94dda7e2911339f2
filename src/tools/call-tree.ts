/**
 * Ending every process of one tool call. A call's processes are the root's
 * descendants, its process group and its cgroup; in a PID namespace the
 * namespace's init is a descendant, and orphans are reparented to it, so a
 * `setsid` or double-forked child stays findable and dies with the namespace
 * (the kernel kills every process of a namespace whose init dies).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type CallCgroup, cgroupMembers } from './cgroup.js';
import { descendants, groupMembers, liveProcesses, type ProcStat, signalProcess } from './process-tree.js';

export interface CallTree {
  /** The process the worker spawned; also the leader of the call's process group. */
  root: number;
  /** The root only wraps the command (bwrap, unshare): a SIGTERM to it would skip the others' grace time. */
  rootIsWrapper: boolean;
  /** The root's start time: a pid reused by another process is never taken for the root. */
  rootStartTime: string;
  cgroup?: CallCgroup;
}

/** Tracks the processes of a call, remembering each by its start time so a reused pid is never mistaken for one. */
class Members {
  private readonly seen = new Map<number, string>();

  constructor(private readonly tree: CallTree) {}

  async current(): Promise<number[]> {
    const all = liveProcesses();
    const found = new Set<number>(groupMembers(this.tree.root, all));
    if (all.get(this.tree.root)?.startTime === this.tree.rootStartTime) for (const pid of [this.tree.root, ...descendants(this.tree.root, all)]) found.add(pid);
    if (this.tree.cgroup) for (const pid of await cgroupMembers(this.tree.cgroup)) if (all.has(pid)) found.add(pid);
    for (const [pid, start] of this.seen) if (all.get(pid)?.startTime === start) found.add(pid);
    for (const pid of found) this.seen.set(pid, (all.get(pid) as ProcStat).startTime);
    return [...found];
  }
}

async function waitForNone(members: Members, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!(await members.current()).length) return true;
    if (Date.now() >= deadline) return false;
    await sleep(25);
  }
}

/**
 * SIGTERM to the call's processes, SIGKILL after the grace time to whatever
 * is left, and back only when nothing of the call is alive (or after 5 s of
 * SIGKILLs, which only an unkillable process in the kernel survives).
 */
export async function terminateCallTree(tree: CallTree, graceMs: number): Promise<void> {
  const members = new Members(tree);
  const first = await members.current();
  if (!first.length) return;
  // A namespace's init ignores SIGTERM unless it handles it, so it is asked like the others and killed after the grace.
  for (const pid of first) if (!(pid === tree.root && tree.rootIsWrapper)) signalProcess(pid, 'SIGTERM');
  if (await waitForNone(members, graceMs)) return;
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const left = await members.current();
    if (!left.length) return;
    for (const pid of left) signalProcess(pid, 'SIGKILL');
    await sleep(25);
  }
}
