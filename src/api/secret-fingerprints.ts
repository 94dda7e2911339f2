/**
 * The workers' secrets as fingerprints, for the callers that start and steer
 * runs without holding the keys. A spec or a control message is stored in
 * the run's history in clear before any worker sees it, so only its caller
 * can refuse a key pasted into it; a caller that holds the key refuses it by
 * value (run-start-check.ts), and one that does not (a CLI in another shell,
 * the panel) reads what the workers on this machine wrote to
 * `TETHER_HOME/secret-fingerprints.json`: salted hashes of every 16-character
 * stretch of each secret, in each of the forms the redactor knows. A text
 * holding any such stretch holds part of a key. The hashes give away nothing
 * a guess of 16 unknown characters would not.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { secretRenderings } from './secrets.js';

/** The length of the stretches hashed: shorter would refuse innocent text by chance, longer would miss a key cut short. */
const WINDOW = 16;
const FILE = 'secret-fingerprints.json';

export interface SecretFingerprints {
  salt: string;
  window: number;
  hashes: string[];
}

function hashOf(salt: string, stretch: string): string {
  return createHash('sha256').update(salt).update(stretch).digest('hex').slice(0, 32);
}

function stretches(text: string, window: number): string[] {
  const all: string[] = [];
  for (let i = 0; i + window <= text.length; i++) all.push(text.slice(i, i + window));
  return all;
}

/**
 * Adds the fingerprints of `secrets` to the file in `home` (kept by every
 * worker that ever ran there, so a run started after one stopped is still
 * checked), readable by its owner only.
 */
export async function recordSecretFingerprints(home: string, secrets: readonly string[]): Promise<void> {
  const file = path.join(home, FILE);
  const known = await readFile(file, 'utf8')
    .then((text) => JSON.parse(text) as SecretFingerprints)
    .catch(() => null);
  const salt = known?.window === WINDOW ? known.salt : randomBytes(16).toString('hex');
  const hashes = new Set(known?.window === WINDOW ? known.hashes : []);
  const before = hashes.size;
  for (const form of secrets.flatMap(secretRenderings)) for (const stretch of stretches(form, WINDOW)) hashes.add(hashOf(salt, stretch));
  if (known && hashes.size === before) return;
  await mkdir(home, { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify({ salt, window: WINDOW, hashes: [...hashes] } satisfies SecretFingerprints), { mode: 0o600 });
  await chmod(temp, 0o600);
  await rename(temp, file);
}

/** The fingerprints the workers of `home` wrote; null when there are none (or they cannot be read). */
export function secretFingerprints(home: string): SecretFingerprints | null {
  try {
    const read = JSON.parse(readFileSync(path.join(home, FILE), 'utf8')) as SecretFingerprints;
    return typeof read.salt === 'string' && read.window > 0 && Array.isArray(read.hashes) ? read : null;
  } catch {
    return null;
  }
}

/** Whether `text` holds a stretch of a fingerprinted secret. */
export function holdsFingerprintedSecret(text: string, fingerprints: SecretFingerprints): boolean {
  if (!fingerprints.hashes.length) return false;
  const known = new Set(fingerprints.hashes);
  for (const stretch of stretches(text, fingerprints.window)) if (known.has(hashOf(fingerprints.salt, stretch))) return true;
  return false;
}
