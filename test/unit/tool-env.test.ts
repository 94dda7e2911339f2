import { describe, expect, it } from 'vitest';
import { toolEnvironment, toolEnvPassThrough } from '../../src/tools/env.js';

const where = { home: '/ws', tmpdir: '/tmp' };

/** A worker's environment as deployments have it: settings, credentials and the machinery's own variables. */
const worker: NodeJS.ProcessEnv = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  TERM: 'xterm',
  TZ: 'UTC',
  USER: 'node',
  LOGNAME: 'node',
  SHELL: '/bin/bash',
  HOME: '/home/node',
  TMPDIR: '/var/tmp/worker',
  TEMPORAL_ADDRESS: 'temporal:7233',
  TEMPORAL_NAMESPACE: 'prod',
  TEMPORAL_TLS_CERT: '/etc/tether/client.pem',
  TEMPORAL_TLS_KEY: '/etc/tether/client.key',
  TETHER_PANEL_TOKEN: 'panel-secret',
  TETHER_ENCRYPTION_KEY: 'enc-secret',
  OPENAI_API_KEY: 'sk-openai',
  OPENAI_BASE_URL: 'https://user:pass@llm.internal/v1',
  ANTHROPIC_API_KEY: 'sk-ant',
  PGPASSWORD: 'pg-secret',
  PGHOST: 'db.internal',
  DATABASE_URL: 'postgres://u:p@db/x',
  GITHUB_PAT: 'ghp_secret',
  GITHUB_TOKEN: 'ghs_secret',
  OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer otel-secret',
  AWS_ACCESS_KEY_ID: 'AKIA',
  AWS_SECRET_ACCESS_KEY: 'aws-secret',
  GOOGLE_APPLICATION_CREDENTIALS: '/secrets/gcp.json',
  NODE_OPTIONS: '--require /opt/hook.js',
  LD_PRELOAD: '/opt/evil.so',
  BASH_ENV: '/opt/env.sh',
  NPM_TOKEN: 'npm-secret',
  SENTRY_DSN: 'https://key@sentry/1',
  SOME_INTERNAL_SETTING: 'internal-setting-value',
};

describe('a tool environment', () => {
  it('holds only the allow-listed variables, with its own HOME and TMPDIR', () => {
    expect(toolEnvironment(worker, where)).toEqual({
      PATH: '/usr/local/bin:/usr/bin:/bin',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      TERM: 'xterm',
      TZ: 'UTC',
      USER: 'node',
      LOGNAME: 'node',
      SHELL: '/bin/bash',
      HOME: '/ws',
      TMPDIR: '/tmp',
    });
  });

  it('has a PATH even when the worker has none', () => {
    expect(toolEnvironment({}, where).PATH).toMatch(/\/usr\/bin/);
  });

  it('passes through what the operator lists in TETHER_TOOL_ENV', () => {
    const env = toolEnvironment({ ...worker, TETHER_TOOL_ENV: 'GITHUB_TOKEN, PGHOST,UNSET_ONE' }, where);
    expect(env.GITHUB_TOKEN).toBe('ghs_secret');
    expect(env.PGHOST).toBe('db.internal');
    expect(env).not.toHaveProperty('UNSET_ONE');
    expect(env).not.toHaveProperty('TETHER_TOOL_ENV');
  });

  it('never passes Temporal, Tether or provider variables, even when the operator lists them', () => {
    const listed = 'TEMPORAL_ADDRESS,TEMPORAL_TLS_KEY,TETHER_PANEL_TOKEN,OPENAI_API_KEY,OPENAI_BASE_URL,ANTHROPIC_API_KEY';
    const env = toolEnvironment({ ...worker, TETHER_TOOL_ENV: listed }, where);
    for (const name of listed.split(',')) expect(env, name).not.toHaveProperty(name);
    expect(toolEnvPassThrough({ TETHER_TOOL_ENV: `${listed},CARGO_HOME` })).toEqual({ names: ['CARGO_HOME'], refused: listed.split(',') });
  });

  it('never passes a provider key under a name in another case, or copied into another variable', () => {
    const key = 'sk-probe-SECRET-123';
    const env = toolEnvironment(
      { ...worker, openai_api_key: key, Anthropic_Api_Key: key, MY_KEY: key, TETHER_TOOL_ENV: 'openai_api_key,Anthropic_Api_Key,MY_KEY' },
      where,
    );
    expect(Object.values(env)).not.toContain(key);
    expect(toolEnvPassThrough({ TETHER_TOOL_ENV: 'openai_api_key,MY_KEY' })).toEqual({ names: ['MY_KEY'], refused: ['openai_api_key'] });
  });

  it('leaks no value of the worker environment that is not allow-listed', () => {
    const values = Object.values(toolEnvironment(worker, where)).join('\n');
    for (const [name, value] of Object.entries(worker)) {
      if (['PATH', 'LANG', 'LC_ALL', 'TERM', 'TZ', 'USER', 'LOGNAME', 'SHELL'].includes(name)) continue;
      expect(values, name).not.toContain(value);
    }
  });
});
