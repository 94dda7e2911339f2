import { lstat, opendir } from 'node:fs/promises';
import path from 'node:path';

/** How much of a directory tree to look at before calling it large. */
export interface TreeLimits {
  entries: number;
  bytes: number;
}

/**
 * Whether the tree under `dir` has fewer entries and bytes than `limits`. It
 * stops looking as soon as either is reached, so a large tree costs no more
 * than a small one to tell apart. Symbolic links are counted, not followed.
 */
export async function smallerThan(dir: string, limits: TreeLimits): Promise<boolean> {
  let entries = 0;
  let bytes = 0;
  const pending = [dir];
  while (pending.length) {
    const next = pending.pop()!;
    for await (const entry of await opendir(next)) {
      entries += 1;
      const at = path.join(next, entry.name);
      if (entry.isDirectory()) pending.push(at);
      else if (entry.isFile()) bytes += (await lstat(at)).size;
      if (entries >= limits.entries || bytes >= limits.bytes) return false;
    }
  }
  return true;
}
