/**
 * A command's output log in the workspace, capped on disk: the head is
 * written as it comes (with backpressure), the tail is kept in a bounded
 * buffer and appended at the end with a note of what was dropped between.
 */
import { createHash } from 'node:crypto';
import { constants, type WriteStream } from 'node:fs';
import { lstat, mkdir, open, realpath, rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import path from 'node:path';
import { openDirectoryWithin, resolveInWorkspace } from './workspace.js';

/** Bytes of a log kept from its start and from its end. */
export const LOG_HEAD_BYTES = 2 * 1024 * 1024;
export const LOG_TAIL_BYTES = 1024 * 1024;

const OUTPUTS_DIR = path.join('.tether', 'outputs');

/**
 * A file name from an untrusted name (a call id comes from the model): no
 * separators, no dots, bounded length. A name that had to change keeps a hash
 * of itself, so two calls (`p/q` and `p_q`) never share one log.
 */
export function safeFileName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_-]/g, '_');
  if (cleaned === name && name.length > 0 && name.length <= 100) return name;
  return `${cleaned.slice(0, 80)}-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/** Workspace-relative path of the log named `name` (a call id, `verify-2`); every caller builds it here. */
export function outputLogPath(name: string): string {
  return path.join(OUTPUTS_DIR, `${safeFileName(name)}.log`);
}

/**
 * Makes each directory on the way to the logs (`.tether`, `.tether/outputs`) a
 * directory again: a file, link or FIFO a tool put in its place is removed,
 * never followed. Else one `ln -s` or `echo x > .tether` would have cost the
 * run every later shell call and check, which only a shell call could repair.
 */
async function reclaimOutputsDir(workspace: string): Promise<void> {
  let at = await realpath(workspace);
  for (const part of OUTPUTS_DIR.split(path.sep)) {
    at = path.join(at, part);
    const found = await lstat(at).catch(() => null);
    if (found && !found.isDirectory()) await rm(at, { force: true });
  }
}

/** The capped log of one command. `write` returns false when the caller should pause until `drained`. */
export class OutputLog {
  private written = 0;
  private bytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;

  private constructor(
    private readonly stream: WriteStream,
    readonly relPath: string,
    private readonly limits: { head: number; tail: number },
  ) {}

  /**
   * Creates (replacing) the log inside the workspace. Whatever a tool left at
   * that path — a symlink out of the workspace, a FIFO that would block the
   * open — is removed first, and the new file is opened exclusively without
   * following links, in its directory opened from the workspace down: a
   * directory a tool swaps for a link meanwhile cannot lead it out.
   */
  static async create(workspace: string, name: string, limits = { head: LOG_HEAD_BYTES, tail: LOG_TAIL_BYTES }): Promise<OutputLog> {
    const relPath = outputLogPath(name);
    await reclaimOutputsDir(workspace);
    const dir = await resolveInWorkspace(workspace, OUTPUTS_DIR);
    const pinned = await openDirectoryWithin(workspace, dir);
    if (!pinned) await mkdir(dir, { recursive: true });
    const file = path.join(pinned ? `/proc/self/fd/${pinned.fd}` : dir, path.basename(relPath));
    const handle = await rm(file, { force: true })
      .then(() => open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644))
      .finally(() => pinned?.close());
    const stream = handle.createWriteStream();
    // A full disk must cost the log, not the worker: an unhandled stream error would crash it.
    stream.on('error', () => undefined);
    return new OutputLog(stream, relPath, limits);
  }

  /** Appends output; false means the disk is behind and the producer should wait for `drained`. */
  write(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    let ready = true;
    const room = this.limits.head - this.written;
    if (room > 0 && !this.stream.destroyed) {
      const head = chunk.subarray(0, room);
      this.written += head.length;
      chunk = chunk.subarray(head.length);
      ready = this.stream.write(head);
    }
    if (chunk.length) this.keepTail(chunk);
    return ready;
  }

  private keepTail(chunk: Buffer): void {
    this.tail.push(Buffer.from(chunk));
    this.tailBytes += chunk.length;
    while (this.tailBytes - this.tail[0].length >= this.limits.tail) this.tailBytes -= this.tail.shift()!.length;
  }

  /** Resolves once the buffered head has reached the file (or the file failed: output then only reaches the model). */
  drained(): Promise<void> {
    if (!this.stream.writableNeedDrain || this.stream.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      this.stream.once('drain', resolve);
      this.stream.once('close', resolve);
    });
  }

  /** Writes the tail and the note of what was dropped, and closes the file. */
  async close(): Promise<{ bytes: number; dropped: number }> {
    const tail = Buffer.concat(this.tail);
    const kept = tail.subarray(Math.max(0, tail.length - this.limits.tail));
    const dropped = this.bytes - this.written - kept.length;
    if (!this.stream.destroyed) {
      if (dropped > 0) {
        this.stream.write(
          `\n… [${dropped} bytes dropped: this log keeps the first ${this.limits.head} and the last ${this.limits.tail} bytes of ${this.bytes}] …\n`,
        );
      }
      if (kept.length) this.stream.write(kept);
      this.stream.end();
    }
    await finished(this.stream).catch(() => undefined);
    return { bytes: this.bytes, dropped: Math.max(0, dropped) };
  }
}
