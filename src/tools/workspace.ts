import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readlink, realpath, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/** A path that would leave the run's workspace. */
export class WorkspaceEscapeError extends Error {
  override name = 'WorkspaceEscapeError';
}

/** Creates the workspace if needed and returns its real path. */
export async function ensureWorkspace(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  return realpath(dir);
}

function inside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Resolves a model-supplied path inside the workspace. Absolute paths, `..`
 * that climbs out and symlinks that point out are all refused: the real path
 * of the target, or of its deepest existing ancestor, must stay inside.
 * `offLimits` (real paths) are refused too where they lie inside the
 * workspace: what the shell's sandbox hides there (Tether's own state when a
 * workspace holds TETHER_HOME), the file tools must not reach either.
 */
export async function resolveInWorkspace(workspace: string, requested: string, offLimits: string[] = []): Promise<string> {
  const resolved = await resolvePath(workspace, requested);
  const root = await realpath(workspace);
  if (offLimits.some((hidden) => hidden !== root && inside(root, hidden) && inside(hidden, resolved)))
    throw new WorkspaceEscapeError(`path is off limits to tools (Tether's state or a secret the sandbox hides): ${requested}`);
  return resolved;
}

async function resolvePath(workspace: string, requested: string): Promise<string> {
  if (!requested?.trim()) throw new WorkspaceEscapeError('path must not be empty');
  if (path.isAbsolute(requested)) throw new WorkspaceEscapeError(`path escapes the workspace: absolute paths are not allowed (${requested})`);
  const root = await realpath(workspace);
  const target = path.resolve(root, requested);
  if (!inside(root, target)) throw new WorkspaceEscapeError(`path escapes the workspace: ${requested}`);
  let existing = target;
  let rest = '';
  for (;;) {
    try {
      const real = await realpath(existing);
      if (!inside(root, real)) throw new WorkspaceEscapeError(`path escapes the workspace through a symlink: ${requested}`);
      return rest ? path.join(real, rest) : real;
    } catch (err) {
      if (err instanceof WorkspaceEscapeError) throw err;
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      rest = rest ? path.join(path.basename(existing), rest) : path.basename(existing);
      existing = path.dirname(existing);
    }
  }
}

/**
 * Writes through a temp file and a rename, so a crash never leaves a
 * half-written file. With `root`, the parent directory is opened (and made)
 * from the root down (openDirectoryWithin), and both the write and the rename
 * go through that open directory (/proc/self/fd/N), after checking where it
 * really is: a directory swapped for a symlink between the path check and the
 * write cannot redirect it, nor the directories it makes.
 */
export async function writeFileAtomic(file: string, content: string, root?: string): Promise<void> {
  const pinned = root ? await openDirectoryWithin(root, path.dirname(file)) : null;
  if (!pinned) await mkdir(path.dirname(file), { recursive: true });
  const dir = pinned ? `/proc/self/fd/${pinned.fd}` : path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(content, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path.join(dir, path.basename(file)));
  } catch (err) {
    await rm(temp, { force: true });
    // The rename's paths are the pinned directory's (/proc/self/fd/N) and the temp file's: say what the caller asked for instead.
    const code = (err as NodeJS.ErrnoException).code;
    const shown = root ? path.relative(root, file) : file;
    if (code === 'EISDIR') throw Object.assign(new Error(`EISDIR: ${shown} is a directory; write_file writes files`), { code });
    throw err;
  } finally {
    await pinned?.close();
  }
}

/**
 * Opens directory `dir` (a real path inside `root`), making what is missing,
 * one component at a time from the root: each step is taken from the
 * directory opened before it (/proc/self/fd/N) and refuses a symlink, so a
 * directory swapped for a link meanwhile can lead neither the directories
 * made nor the open directory out of `root`. The result is checked once more
 * against where the kernel says it is. Null where /proc cannot say where an
 * open file is (the caller then works by path).
 */
export async function openDirectoryWithin(root: string, dir: string): Promise<FileHandle | null> {
  const realRoot = await realpath(root);
  const rel = path.relative(realRoot, path.resolve(realRoot, dir));
  if (!inside(realRoot, path.resolve(realRoot, dir))) throw new WorkspaceEscapeError(`path escapes the workspace: ${dir}`);
  let current = await open(realRoot, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    if ((await openPath(current.fd)) === null) {
      await current.close();
      return null;
    }
    for (const part of rel.split(path.sep).filter(Boolean)) {
      const next = `/proc/self/fd/${current.fd}/${part}`;
      await mkdir(next).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      const opened = await open(next, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(async (err: NodeJS.ErrnoException) => {
        if ((err.code === 'ENOTDIR' || err.code === 'ELOOP') && (await lstat(next)).isSymbolicLink())
          throw new WorkspaceEscapeError(`path escapes the workspace: a directory on the way to ${rel} turned into a link while being written`);
        throw err;
      });
      await current.close();
      current = opened;
    }
    const where = await openPath(current.fd);
    if (where === DELETED) throw new Error(`${dir} was removed while being written`);
    if (where === null || !inside(realRoot, where)) throw new WorkspaceEscapeError(`path escapes the workspace: ${dir} is now ${String(where)}`);
    return current;
  } catch (err) {
    await current.close();
    throw err;
  }
}

const DELETED = Symbol('deleted');

/** Where the open file `fd` is now, as the kernel names it; DELETED once unlinked; null without /proc. */
async function openPath(fd: number): Promise<string | typeof DELETED | null> {
  const link = await readlink(`/proc/self/fd/${fd}`).catch(() => null);
  if (link === null) return null;
  return link.endsWith(' (deleted)') ? DELETED : link;
}

/** Whether the open file `fd` lies inside `root` now (an unlinked one counts as not); null where /proc cannot say. */
export async function openFileInside(root: string, fd: number): Promise<boolean | null> {
  const where = await openPath(fd);
  if (where === null) return null;
  return where !== DELETED && inside(await realpath(root), where);
}
