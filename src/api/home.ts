import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root: two levels above this file. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where Tether keeps state: the Temporal CLI, SQLite, default workspaces (`TETHER_HOME`, default `<project>/.tether`). */
export function tetherHome(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.TETHER_HOME || path.join(PROJECT_ROOT, '.tether'));
}

/** The directories of Tether's home that hold a directory for each run: a workspace may be one of those. */
const RUN_DIRECTORIES = new Set(['workspaces', 'demo']);

/**
 * Why `workspace` (a real path) cannot be a run's workspace, or null: Tether's
 * home holds its tokens, its database and every run's files, so a workspace
 * may lie inside it only as a run's own directory there (`workspaces/<run>`,
 * `demo/<run>`). A workspace that holds the home (`--workspace .`) is fine:
 * the tools and the sandbox hide the home inside it.
 */
export function homeWorkspaceProblem(workspace: string, home: string): string | null {
  const rel = path.relative(home, workspace);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  const parts = rel.split(path.sep).filter(Boolean);
  if (parts.length >= 2 && RUN_DIRECTORIES.has(parts[0])) return null;
  const what = rel === '' ? "is Tether's home" : "lies inside Tether's home";
  return `workspace ${workspace} ${what} (TETHER_HOME ${home}), which holds its tokens, its database and other runs' files: choose another directory`;
}
