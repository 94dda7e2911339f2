import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { redactorFromEnv } from '../../src/api/secrets.js';
import { secretBearingEnv } from '../../src/ops/secret-env.js';

describe('the environment secrets are read from', () => {
  const home = mkdtempSync(path.join(os.tmpdir(), 'tether-secret-env-'));
  const keyFile = path.join(home, 'tls', 'key.pem');
  writeFileSync(path.join(home, 'creds.json'), '{}');
  const env = {
    OPENAI_API_KEY: 'sk-live-0123456789abcdefghij',
    GOOGLE_APPLICATION_CREDENTIALS: path.join(home, 'creds.json'),
    // A path by its name, though the file is not on this machine; its _DATA twin holds the key itself.
    TEMPORAL_TLS_KEY_PATH: keyFile,
    TEMPORAL_TLS_KEY_DATA: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----',
    AWS_SECRET_ACCESS_KEY: '/aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7',
    TETHER_HOME: home,
  };

  it('leaves out secret-named variables whose value is a path to something on this machine, and keeps every other', () => {
    expect(secretBearingEnv(env)).toEqual({
      OPENAI_API_KEY: env.OPENAI_API_KEY,
      // Names nothing here, under a name that is no path's: it may be a key that starts with a slash.
      AWS_SECRET_ACCESS_KEY: env.AWS_SECRET_ACCESS_KEY,
      TEMPORAL_TLS_KEY_DATA: env.TEMPORAL_TLS_KEY_DATA,
      TETHER_HOME: home,
    });
  });

  it("gives a redactor that leaves paths sharing the pointer's start alone and still hides the keys", () => {
    const redactor = redactorFromEnv(secretBearingEnv(env));
    const command = `ls ${home}/workspaces/run-1; cat ${env.GOOGLE_APPLICATION_CREDENTIALS}; echo ${env.OPENAI_API_KEY}`;
    expect(redactor.text(command)).toBe(`ls ${home}/workspaces/run-1; cat ${env.GOOGLE_APPLICATION_CREDENTIALS}; echo [redacted]`);
    // What the worker did before: the pointer's value and any half of it were secrets.
    expect(redactorFromEnv(env).text(`ls ${home}/workspaces/run-1`)).toContain('[redacted]');
  });
});
