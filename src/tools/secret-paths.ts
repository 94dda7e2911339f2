/**
 * Files and directories a sandboxed tool must not see even though the rest of
 * the filesystem is readable: Tether's state (the Temporal database, other
 * runs' workspaces), the worker's TLS material and credentials named in its
 * environment, secret mounts, and the worker user's home dotfiles.
 */
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isSecretName } from '../api/secrets.js';
import type { HiddenPath } from './jail-plan.js';

/**
 * Variables whose values are paths to credentials: the worker's Temporal TLS
 * material, cloud and cluster credentials, key files. (Not certificate
 * bundles like SSL_CERT_FILE: they are public, and tools need them.)
 */
const PATH_SECRET_NAME = /^TEMPORAL_TLS_|CREDENTIALS|KUBECONFIG|_KEY_FILE$|_KEY_PATH$/i;
/**
 * Runtime directories: besides secret mounts they hold Unix sockets (Docker's,
 * D-Bus, PostgreSQL), which a read-only mount and a private network namespace
 * do not stop a process from connecting to.
 */
const RUNTIME_DIRS = ['/run', '/var/run', '/run/secrets', '/var/run/secrets'];
/** Files a networked tool needs for name resolution, which may live in a runtime directory (systemd-resolved). */
const RESOLVER_FILES = ['/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf'];
/** Public certificate stores: a variable may name one (a TLS CA), and hiding it would only break tools. */
const PUBLIC_STORES = ['/etc/ssl', '/etc/pki', '/usr/share/ca-certificates', '/etc/ca-certificates'];

function real(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

function isDirectory(p: string): boolean | null {
  try {
    return statSync(p).isDirectory();
  } catch {
    return null;
  }
}

const isAncestor = (a: string, b: string) => b === a || b.startsWith(`${a === '/' ? '' : a}/`);

/** Dot entries of the home directory, except those a tool needs to run (an ancestor of a PATH entry). */
function homeDotfiles(home: string, keep: string[]): string[] {
  if (!home || home === '/') return [];
  let entries: string[];
  try {
    entries = readdirSync(home).filter((name) => name.startsWith('.'));
  } catch {
    return [];
  }
  return entries.map((name) => path.join(home, name)).filter((p) => !keep.some((k) => isAncestor(p, k)));
}

/** The paths to hide from sandboxed tools; only existing ones, by their real paths. */
export function secretPaths(env: NodeJS.ProcessEnv, opts: { tetherHome: string; home?: string }): HiddenPath[] {
  const pathEntries = (env.PATH ?? '').split(':').filter((p) => path.isAbsolute(p));
  const keep = pathEntries.map((p) => real(p) ?? p);
  const named = Object.entries(env)
    .filter(([name, value]) => value && path.isAbsolute(value) && (PATH_SECRET_NAME.test(name) || isSecretName(name)))
    .map(([, value]) => value as string);
  const listed = (env.TETHER_SANDBOX_HIDE ?? '').split(':').filter((p) => path.isAbsolute(p));
  // Tether's state and what the operator lists are hidden even when a PATH entry lies inside them.
  const always = [opts.tetherHome, ...listed, ...RUNTIME_DIRS];
  const unlessNeeded = [...named, ...homeDotfiles(opts.home ?? os.homedir(), keep)];
  const hidden = new Map<string, HiddenPath>();
  for (const candidate of [...always, ...unlessNeeded]) {
    const resolved = existsSync(candidate) ? real(candidate) : null;
    if (!resolved || resolved === '/') continue;
    if (PUBLIC_STORES.some((store) => isAncestor(store, resolved))) continue;
    if (!always.includes(candidate) && keep.some((k) => isAncestor(resolved, k))) continue;
    const directory = isDirectory(resolved);
    if (directory !== null) hidden.set(resolved, { path: resolved, directory });
  }
  return [...hidden.values()];
}

/** Resolver files under a hidden directory, to be bound back read-only for a call with the network. */
export function resolverFilesUnder(hidden: HiddenPath[]): string[] {
  const dirs = hidden.filter((h) => h.directory).map((h) => h.path);
  return RESOLVER_FILES.map(real).filter((p): p is string => p !== null && dirs.some((d) => isAncestor(d, p)));
}
