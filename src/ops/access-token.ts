/**
 * Bearer tokens of the panel and the codec server. An empty token must never
 * mean "no authentication": a variable that is unset gets a generated token,
 * saved (mode 0600) under TETHER_HOME so it survives restarts and open browser
 * tabs keep working; a variable that is set must hold a usable token, or the
 * process refuses to start. Messages never quote a token.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { link, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { tetherHome } from '../api/home.js';

/** Shorter tokens can be guessed or brute-forced over a network. */
export const MIN_TOKEN_LENGTH = 24;

// RFC 6750's token68: what an Authorization header can carry without escaping.
const TOKEN68 = /^[A-Za-z0-9._~+/-]+=*$/;

/** Why a token cannot be used, or null when it can. */
export function tokenProblem(value: string): string | null {
  if (value.length === 0) return 'is empty';
  if (value.length < MIN_TOKEN_LENGTH) return `has ${value.length} characters, fewer than the ${MIN_TOKEN_LENGTH} required`;
  if (!TOKEN68.test(value)) return 'may contain only letters, digits and . _ ~ + / - (with = at the end)';
  return null;
}

/** Returns `value` when it is a usable token; otherwise throws an error that says how to fix `name`. */
export function requireToken(value: string, name: string, fix = 'or unset it to have one generated'): string {
  const problem = tokenProblem(value);
  if (problem) throw new Error(`${name} ${problem}: set it to a long random value (e.g. \`openssl rand -hex 24\`), ${fix}`);
  return value;
}

/** Compares digests in constant time, so neither length nor prefix leaks; an empty value never matches. */
export function tokensMatch(given: string | null | undefined, expected: string): boolean {
  if (!given || !expected) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** A new random token (32 URL-safe characters). */
export function generateToken(): string {
  return randomBytes(24).toString('base64url');
}

/** A token and where it came from, so a service can say where to find it. */
export interface ResolvedToken {
  token: string;
  source: 'env' | 'file' | 'generated';
  /** The file that holds it, when it is saved under TETHER_HOME. */
  file?: string;
}

/**
 * The token in `env[variable]`; when the variable is unset, the one saved in
 * `<TETHER_HOME>/<fileName>`, created on first use.
 */
export async function resolveToken(variable: string, fileName: string, env: NodeJS.ProcessEnv = process.env): Promise<ResolvedToken> {
  const value = env[variable];
  if (value !== undefined) return { token: requireToken(value, variable), source: 'env' };
  const file = path.join(tetherHome(env), fileName);
  const saved = await readSaved(file);
  if (saved !== null) return { token: saved, source: 'file', file };
  await createOnce(file, `${generateToken()}\n`);
  const token = await readSaved(file);
  if (token === null) throw new Error(`${file} vanished while it was being created`);
  return { token, source: 'generated', file };
}

/** Writes a complete file under a temporary name and links it into place, so a reader never sees it half written. */
async function createOnce(file: string, content: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, content, { mode: 0o600 });
  try {
    await link(temp, file);
  } catch (err) {
    // Another process created it first: both then use its token.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await rm(temp, { force: true });
  }
}

async function readSaved(file: string): Promise<string | null> {
  let mode: number;
  try {
    mode = (await stat(file)).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  // Like ssh with a private key: a token other users can read is no secret.
  if (mode & 0o077) throw new Error(`${file} is readable by other users (mode ${(mode & 0o777).toString(8)}): run \`chmod 600 ${file}\``);
  const token = (await readFile(file, 'utf8')).trim();
  return requireToken(token, file, 'or delete the file to have a new one generated');
}

/** Where a service's token came from, for its start-up line. */
export function tokenOrigin(resolved: ResolvedToken, variable: string): string {
  if (resolved.source === 'env') return `token from ${variable}`;
  return `${resolved.source === 'generated' ? 'new token generated and saved' : 'token'} in ${resolved.file}`;
}
