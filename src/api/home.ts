import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root: two levels above this file. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where Tether keeps state: the Temporal CLI, SQLite, default workspaces (`TETHER_HOME`, default `<project>/.tether`). */
export function tetherHome(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.TETHER_HOME || path.join(PROJECT_ROOT, '.tether'));
}
