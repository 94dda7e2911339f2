import { describe, expect, it } from 'vitest';
import { settingsForOtherShells } from '../../src/cli/other-shells.js';

describe('what another shell must export to reach a local server', () => {
  it('is nothing with the defaults', () => {
    expect(settingsForOtherShells('127.0.0.1:7233', { namespace: 'default', taskQueue: 'tether' })).toBe('');
  });

  it('names each setting that differs, and only those', () => {
    expect(settingsForOtherShells('127.0.0.1:7300', { namespace: 'default', taskQueue: 'tether' })).toBe('TEMPORAL_ADDRESS=127.0.0.1:7300');
    expect(settingsForOtherShells('0.0.0.0:7233', { namespace: 'team', taskQueue: 'q' })).toBe('TEMPORAL_NAMESPACE=team TETHER_TASK_QUEUE=q');
  });
});
