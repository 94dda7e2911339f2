import { randomBytes } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { homeWorkspaceProblem, tetherHome } from '../api/home.js';
import { holdsFingerprintedSecret, secretFingerprints } from '../api/secret-fingerprints.js';
import { fieldHolding, findSecretField, type SecretField } from '../api/secrets.js';
import type { RunSpec } from '../api/spec.js';
import { secretBearingEnv } from '../ops/secret-env.js';
import { TetherError } from './errors.js';

/** Provider keys are long; a short secret value (PASSWORD=admin) would refuse innocent goals that happen to contain it. */
const SECRET_KEY_LENGTH = 12;

export function newRunId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-');
  return `run-${stamp}-${randomBytes(3).toString('hex')}`;
}

/**
 * Everything a run's start can refuse without asking Temporal: the spec's
 * schema, a secret's value pasted into it (the spec is stored in the run's
 * history in clear) and the run id. A relative workspace is made absolute,
 * where the caller's working directory means something. Callers that read
 * their input from people (the CLI) check it before they connect, so a bad
 * spec is reported as such even when the server is down.
 */
export async function checkRunStart(input: unknown, opts: { id?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ spec: RunSpec; runId: string }> {
  // The spec's schema (zod) is loaded by the verbs that start runs, not by every client.
  const { parseRunSpec } = await import('../api/spec.js');
  let spec: RunSpec;
  try {
    spec = parseRunSpec(input);
  } catch (err) {
    throw new TetherError((err as Error).message, 'invalid');
  }
  const leak = secretIn(spec, opts.env ?? process.env);
  if (leak) {
    throw new TetherError(`invalid RunSpec: ${leak.field} contains ${whose(leak)}; a run's spec is stored in its history in clear, so remove it`, 'invalid');
  }
  if (spec.workspace) spec = { ...spec, workspace: path.resolve(spec.workspace) };
  if (spec.workspace) await checkWorkspaceHere(spec.workspace, opts.env ?? process.env);
  return { spec, runId: checkRunId(opts.id ?? newRunId(), opts.env) };
}

/**
 * A workspace that exists here as something other than a directory (a file, a
 * device) cannot be one on the worker either, which shares this path's
 * meaning wherever a relative one is made absolute here. A path that does not
 * exist is the worker's to create.
 */
async function checkWorkspaceHere(workspace: string, env: NodeJS.ProcessEnv): Promise<void> {
  const found = await stat(workspace).catch(() => null);
  if (found && !found.isDirectory()) throw new TetherError(`invalid RunSpec: workspace ${workspace} is not a directory`, 'invalid');
  const real = async (p: string) => realpath(p).catch(() => path.resolve(p));
  const problem = homeWorkspaceProblem(await real(workspace), await real(tetherHome(env)));
  if (problem) throw new TetherError(`invalid RunSpec: ${problem}`, 'invalid');
}

/** Stands for the variable in a leak found by fingerprint: the caller does not hold the secret, a worker does. */
const A_WORKER_HOLDS = '\0fingerprint';

/**
 * Where `value` holds a secret: one of `env`'s (this caller's), by value, or
 * one that a worker on this machine holds, by its fingerprints
 * (src/api/secret-fingerprints.ts); null when it holds none.
 */
function secretIn(value: unknown, env: NodeJS.ProcessEnv): SecretField | null {
  const byValue = findSecretField(value, secretBearingEnv(env), SECRET_KEY_LENGTH);
  if (byValue) return byValue;
  const fingerprints = secretFingerprints(tetherHome(env));
  return fingerprints && fieldHolding(value, (text) => (holdsFingerprintedSecret(text, fingerprints) ? A_WORKER_HOLDS : null));
}

function whose(leak: SecretField): string {
  return leak.variable === A_WORKER_HOLDS ? 'part of a secret that a worker on this machine holds' : `the value of the secret ${leak.variable}`;
}

/** A control message is kept in the run's history in clear, as a spec is: one that holds a secret's value is refused, as a spec is. */
export function checkControlSecrets(name: string, payload: unknown, env: NodeJS.ProcessEnv = process.env): void {
  const leak = secretIn(payload, env);
  if (leak) {
    throw new TetherError(`${name}: ${leak.field} contains ${whose(leak)}; a control message is stored in the run's history in clear, so remove it`, 'invalid');
  }
}

/** A run id is a workflow id that reads well in a URL, a shell and a visibility query, and holds no secret: ids are shown everywhere. */
export function checkRunId(runId: string, env: NodeJS.ProcessEnv = process.env): string {
  const secret = secretIn(runId, env);
  if (secret) throw new TetherError(`invalid run id: it contains ${whose(secret)}; a run id is shown in clear everywhere (history, lists, URLs)`, 'invalid');
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/.test(runId)) {
    throw new TetherError(`invalid run id "${runId}": a letter or digit, then letters, digits, and . _ : - (at most 200 characters)`, 'invalid');
  }
  return runId;
}
