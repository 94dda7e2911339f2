import { describe, expect, it } from 'vitest';
import { auditFromHistory } from '../../src/history/audit.js';
import type { RunHistory } from '../../src/history/run-history.js';

const at = Date.parse('2026-03-01T12:00:00Z');

function history(overrides: Partial<RunHistory>): RunHistory {
  return { runId: 'r', executions: [], activities: [], controls: [], children: [], states: [], cancelRequest: null, ...overrides };
}

describe('the audit trail read from a history', () => {
  it('holds each control message the run could take, signed as sent, and a terminate as the kill it was', () => {
    const trail = auditFromHistory(
      history({
        controls: [
          {
            execution: 0,
            at,
            name: 'steer',
            via: 'update',
            payload: { message: 'try the parser', audit: { by: 'ana@laptop', via: 'cli' } },
            identity: null,
            error: null,
          },
          { execution: 0, at: at + 1, name: 'steer', via: 'update', payload: { message: '' }, identity: null, error: 'refused: empty' },
        ],
        executions: [{ executionId: 'e1', startedAt: at - 1_000, endedAt: at + 5_000, end: 'terminated', error: 'stuck for an hour' }],
      }),
    );
    expect(trail).toEqual([
      { action: 'steer', by: 'ana@laptop', via: 'cli', at: new Date(at).toISOString(), detail: 'try the parser' },
      { action: 'kill', by: 'unknown', at: new Date(at + 5_000).toISOString(), detail: 'terminated: stuck for an hour' },
    ]);
  });

  it('adds nothing for a run that ended by itself', () => {
    const ended = history({ executions: [{ executionId: 'e1', startedAt: at, endedAt: at + 1, end: 'completed' }] });
    expect(auditFromHistory(ended)).toEqual([]);
  });
});
