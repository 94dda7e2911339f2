import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dynamicConfigFlags } from '../../bench/dynamic-config.js';
import { engineFlags, TUNED_DYNAMIC_CONFIG } from '../../src/server/engine-tuning.js';

describe('the tuned engine flags', () => {
  it('lift the per-shard transfer queue pacing and put a file-backed server in WAL mode', () => {
    const flags = engineFlags({ db: '/tmp/x/temporal.db' });
    expect(flags).toContain('history.transferProcessorMaxPollRPS=1000');
    expect(flags).toContain('history.timerProcessorMaxTimeShift="100ms"');
    expect(flags.join(' ')).toContain('--sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal');
    const values = flags.filter((_, i) => flags[i - 1] === '--dynamic-config-value');
    expect(values).toEqual(Object.entries(TUNED_DYNAMIC_CONFIG).map(([k, v]) => `${k}=${JSON.stringify(v)}`));
  });

  it('give an in-memory server no SQLite pragmas', () => {
    expect(engineFlags({ db: null })).not.toContain('--sqlite-pragma');
  });

  it("leave a key the caller sets itself to the caller's value", () => {
    const flags = engineFlags({ db: null, extraArgs: ['--dynamic-config-value', 'history.transferProcessorMaxPollRPS=5', '--headless'] });
    expect(flags.join(' ')).not.toContain('history.transferProcessorMaxPollRPS');
  });

  it("are the cluster's too: deploy/dynamicconfig/tether.yaml sets each of them to the same value", () => {
    const cluster = dynamicConfigFlags(readFileSync(new URL('../../deploy/dynamicconfig/tether.yaml', import.meta.url), 'utf8')).flags;
    for (const [key, value] of Object.entries(TUNED_DYNAMIC_CONFIG)) expect(cluster).toContain(`${key}=${JSON.stringify(value)}`);
  });
});
