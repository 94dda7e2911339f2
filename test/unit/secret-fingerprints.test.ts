import { readFile, stat } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { recordSecretFingerprints } from '../../src/api/secret-fingerprints.js';
import { checkControlSecrets, checkRunId, checkRunStart } from '../../src/client/run-start-check.js';

const KEY = 'sk-audit-Q7rT9xLm2Vb8Nc4Zp6Wd1Ys3';
const OTHER = 'ghp_9fK2mQ7xR4tY8wZ1vB6nC3jH5gL0pD2s';
const HELD = /part of a secret that a worker on this machine holds/;

async function homeWithWorkerKeys(...keys: string[]): Promise<string> {
  const home = await mkdtemp(path.join(os.tmpdir(), 'tether-fingerprints-'));
  for (const key of keys) await recordSecretFingerprints(home, [key]);
  return home;
}

describe("a caller without the workers' keys", () => {
  it('refuses a spec, a control message or a run id holding one, whole, cut short or encoded, by the fingerprints the workers wrote', async () => {
    const home = await homeWithWorkerKeys(KEY, OTHER);
    const env = { TETHER_HOME: home };
    const spec = (extra: object) => ({ goal: 'do it', model: 'scripted:x', ...extra });
    for (const [extra, field] of [
      [{ system: `use ${KEY} please` }, 'system'],
      [{ goal: `the first part ${KEY.slice(0, 20)}` }, 'goal'],
      [{ goal: `encoded ${Buffer.from(KEY).toString('base64')}` }, 'goal'],
      [{ verify: { command: `curl -H "Authorization: token ${OTHER}" x` } }, 'verify.command'],
    ] as const) {
      await expect(checkRunStart(spec(extra), { env })).rejects.toMatchObject({ code: 'invalid', message: expect.stringMatching(HELD) });
      await expect(checkRunStart(spec(extra), { env })).rejects.toThrow(`invalid RunSpec: ${field} contains`);
    }
    expect(() => checkControlSecrets('steer', { message: `here: ${KEY}` }, env)).toThrow(HELD);
    expect(() => checkRunId(`run-${KEY}`, env)).toThrow(HELD);
    await expect(checkRunStart(spec({ goal: 'write sk-audit code and a 16-character-long sentence' }), { env })).resolves.toBeTruthy();
  });

  it('keeps the fingerprints only, readable by their owner, and adds to them', async () => {
    const home = await homeWithWorkerKeys(KEY);
    const file = path.join(home, 'secret-fingerprints.json');
    const first = JSON.parse(await readFile(file, 'utf8')) as { salt: string; hashes: string[] };
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, 'utf8')).not.toContain(KEY.slice(0, 8));
    await recordSecretFingerprints(home, [OTHER]);
    const second = JSON.parse(await readFile(file, 'utf8')) as { salt: string; hashes: string[] };
    expect(second.salt).toBe(first.salt);
    expect(second.hashes).toEqual(expect.arrayContaining(first.hashes));
    expect(second.hashes.length).toBeGreaterThan(first.hashes.length);
  });
});
