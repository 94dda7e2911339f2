/**
 * After a worker crash, a tool call it ran may still be running with nobody
 * to collect its result. The retry ends it — but only once it has proved the
 * processes are that call's: pids and hostnames repeat after a container
 * restart, so a bare pid could name another run's process, or anyone's.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { CALL_CGROUP_PREFIX, type CallCgroup, destroyCallCgroup } from './cgroup.js';
import { terminateCallTree } from './call-tree.js';
import { identify, isSameProcess, type ProcessIdentity } from './process-tree.js';

/** What a call's heartbeats record so that a retry can find the call again, and nothing else. */
export interface CallTrace {
  identity?: ProcessIdentity | null;
  cgroup?: CallCgroup;
}

export type CleanUp = 'killed' | 'cgroup-emptied' | 'nothing-left' | 'not-ours';

const CGROUP_ROOT = '/sys/fs/cgroup/';

/** A cgroup path from a heartbeat is trusted only if it can be one of ours: a call cgroup, under the cgroup mount. */
function isCallCgroup(group: CallCgroup | undefined): group is CallCgroup {
  const dirs = Object.values(group?.dirs ?? {});
  return (
    dirs.length > 0 &&
    dirs.every((dir) => typeof dir === 'string' && path.resolve(dir).startsWith(CGROUP_ROOT) && path.basename(dir).startsWith(CALL_CGROUP_PREFIX))
  );
}

/**
 * Ends what is left of an interrupted call. The spawned process is killed
 * (with everything under it) only if it is provably the same process: same
 * pid, same start time, same boot. A call cgroup's members are the call's by
 * construction (each call's cgroup has a unique name).
 */
export async function cleanUpInterruptedCall(trace: CallTrace, graceMs = 2_000): Promise<CleanUp> {
  const { identity } = trace;
  const cgroup = isCallCgroup(trace.cgroup) ? trace.cgroup : undefined;
  if (identity && isSameProcess(identity)) {
    await terminateCallTree({ root: identity.pid, rootIsWrapper: true, rootStartTime: identity.startTime, cgroup }, graceMs);
    if (cgroup) await destroyCallCgroup(cgroup);
    return 'killed';
  }
  if (cgroup && Object.values(cgroup.dirs).some((dir) => existsSync(dir))) {
    await destroyCallCgroup(cgroup);
    return 'cgroup-emptied';
  }
  // A live process under the recorded pid that is not the recorded process belongs to someone else.
  return identity && identify(identity.pid) ? 'not-ours' : 'nothing-left';
}
