/**
 * Reading a file a tool may have prepared as a trap. A FIFO with no writer
 * blocks a plain read forever, in libuv's small thread pool that every run on
 * the worker shares; a device can stream without end; a huge file would fill
 * the worker's memory. So: only regular files, opened without blocking or
 * following links, and at most a head and a tail of them.
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open } from 'node:fs/promises';
import { openFileInside } from './workspace.js';

export type BoundedRead = { ok: true; text: string; size: number; truncated: boolean } | { ok: false; error: string };

function kindOf(info: Stats): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO (named pipe)';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/**
 * Reads up to `maxBytes` of a regular file: all of a small one, else its
 * first and last halves with a note of the size. Anything else is an error
 * value naming what the path is.
 */
export async function readBounded(file: string, label: string, maxBytes: number, within?: string): Promise<BoundedRead> {
  const before = await lstat(file);
  if (!before.isFile()) return { ok: false, error: `${label} is ${kindOf(before)}, not a regular file; only regular files can be read` };
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  try {
    const info = await handle.stat();
    // Swapped for something else between the check and the open.
    if (!info.isFile() || info.ino !== before.ino || info.dev !== before.dev) return { ok: false, error: `${label} changed while being opened; try again` };
    // A directory on the way swapped for a symlink after the path was checked: the open file is elsewhere.
    if (within && (await openFileInside(within, handle.fd)) === false)
      return { ok: false, error: `${label} is outside the workspace (a directory on its path changed into a link)` };
    // Another name of this file may lie outside the workspace, and nothing here can tell where.
    if (within && info.nlink > 1)
      return { ok: false, error: `${label} has ${info.nlink} hard links; files with other names, possibly outside the workspace, are not read` };
    if (info.size <= maxBytes) {
      const buffer = Buffer.alloc(info.size);
      const { bytesRead } = await handle.read(buffer, 0, info.size, 0);
      return { ok: true, text: buffer.subarray(0, bytesRead).toString('utf8'), size: info.size, truncated: false };
    }
    const half = Math.floor(maxBytes / 2);
    const head = Buffer.alloc(half);
    const tail = Buffer.alloc(half);
    const read = [await handle.read(head, 0, half, 0), await handle.read(tail, 0, half, info.size - half)];
    const omitted = info.size - 2 * half;
    const text = `${head.subarray(0, read[0].bytesRead).toString('utf8')}\n… [${omitted} bytes of ${info.size} omitted; read parts with the shell, e.g. sed -n or tail -c] …\n${tail.subarray(0, read[1].bytesRead).toString('utf8')}`;
    return { ok: true, text, size: info.size, truncated: true };
  } finally {
    await handle.close();
  }
}
