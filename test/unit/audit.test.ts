import { describe, expect, it } from 'vitest';
import { controlSchemas, NO_REASON, salvageSignal, salvageSignalAudit, salvageStopSignal } from '../../src/api/control.js';
import { readControl } from '../../src/history/run-history.js';
import type { AuditEntry } from '../../src/api/types.js';
import { parseRunSpec } from '../../src/api/spec.js';
import { cliAudit } from '../../src/cli/actor.js';
import type { TetherError } from '../../src/client/errors.js';
import { AUDIT_CAP, appendAudit, auditEntry } from '../../src/api/audit.js';
import { RunState } from '../../src/run/run-state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function newRun(): RunState {
  return new RunState('run-1', parseRunSpec({ goal: 'do it', model: 'scripted:x', limits: { maxSteps: 5 } }), T0, T0 + 60_000);
}

describe('audit trail', () => {
  it('records who sent each applied control message, when (workflow time) and why', () => {
    const run = newRun();
    run.apply('steer', run.validate('steer', { message: 'look at the tests', audit: { by: 'ana@box', via: 'cli' } }), T0 + 1_000);
    run.apply('extend', run.validate('extend', { by: '10m', steps: 3, audit: { by: 'alice', via: 'panel' } }), T0 + 2_000);
    run.apply('emergencyStop', run.validate('emergencyStop', { reason: 'smells wrong' }), T0 + 3_000);
    run.apply('clearEmergency', run.validate('clearEmergency', { audit: { by: 'critic', via: 'critic' } }), T0 + 4_000);
    run.apply('kill', run.validate('kill', { reason: 'done here', audit: { by: 'ops-bot', via: 'cli' } }), T0 + 5_000);
    expect(run.status(T0 + 6_000).audit).toEqual([
      { action: 'steer', by: 'ana@box', via: 'cli', at: '2026-01-01T00:00:01.000Z', detail: 'look at the tests' },
      { action: 'extend', by: 'alice', via: 'panel', at: '2026-01-01T00:00:02.000Z', detail: 'by 10m, +3 steps' },
      // A raw Temporal client sends no audit field.
      { action: 'emergencyStop', by: 'unknown', at: '2026-01-01T00:00:03.000Z', detail: 'smells wrong' },
      { action: 'clearEmergency', by: 'critic', via: 'critic', at: '2026-01-01T00:00:04.000Z' },
      { action: 'kill', by: 'ops-bot', via: 'cli', at: '2026-01-01T00:00:05.000Z', detail: 'done here' },
    ]);
  });

  it('has no audit field before the first control message', () => {
    expect(newRun().status(T0).audit).toBeUndefined();
  });

  it('keeps the trail across continue-as-new', () => {
    const run = newRun();
    run.apply('steer', run.validate('steer', { message: 'hi', audit: { by: 'bo' } }), T0);
    const next = new RunState('run-1', run.spec, T0, 0, JSON.parse(JSON.stringify(run.carryOver())));
    next.apply('extend', next.validate('extend', { steps: 1 }), T0 + 1);
    expect(next.status(T0 + 2).audit?.map((e) => `${e.action}:${e.by}`)).toEqual(['steer:bo', 'extend:unknown']);
  });

  it(`keeps only the newest ${AUDIT_CAP} entries`, () => {
    const trail: AuditEntry[] = [];
    for (let i = 0; i < AUDIT_CAP + 50; i++) appendAudit(trail, auditEntry({ name: 'extend', payload: { steps: i + 1 } }, T0 + i));
    expect(trail).toHaveLength(AUDIT_CAP);
    expect(trail[0]!.detail).toBe('+51 steps');
    expect(trail.at(-1)!.detail).toBe(`+${AUDIT_CAP + 50} steps`);
  });

  it('says what approve, answer and a tool decision asked for', () => {
    const detail = (control: Parameters<typeof auditEntry>[0]) => auditEntry(control, T0).detail;
    expect(detail({ name: 'approve', payload: { addBudgetUsd: 5 } })).toBe('+$5');
    expect(detail({ name: 'answer', payload: { text: 'use staging', audit: { by: 'ana' } } })).toBe('use staging');
    expect(detail({ name: 'decideTool', payload: { callId: 'call_1', decision: 'deny', reason: 'not there' } })).toBe('deny call_1: not there');
    expect(detail({ name: 'decideTool', payload: { callId: 'call_2', decision: 'approve' } })).toBe('approve call_2');
  });

  it('keeps a long steer to its first characters', () => {
    const entry = auditEntry({ name: 'steer', payload: { message: 'x'.repeat(10_000) } }, T0);
    expect(entry.detail!.length).toBeLessThanOrEqual(200);
  });

  it('rejects an empty or unknown audit, so a sender cannot hide as nobody', () => {
    expect(controlSchemas.kill.safeParse({ reason: 'r', audit: { by: '  ' } }).success).toBe(false);
    expect(controlSchemas.kill.safeParse({ reason: 'r', audit: { by: 'a', via: 'email' } }).success).toBe(false);
    expect(controlSchemas.kill.safeParse({ reason: 'r', audit: { by: 'a', extra: 1 } }).success).toBe(false);
  });

  it('signs CLI messages with --as, else user@host', () => {
    expect(cliAudit('release-bot')).toEqual({ by: 'release-bot', via: 'cli' });
    expect(cliAudit(undefined, () => 'ana@box')).toEqual({ by: 'ana@box', via: 'cli' });
    expect(cliAudit(undefined).by).toMatch(/^.+@.+$/);
  });

  it('refuses an --as no trail could show as one name: empty, blank, too long, or with control characters', () => {
    for (const [as, message] of [
      ['', '--as: audit.by must not be empty'],
      ['   ', '--as: audit.by must not be empty'],
      ['x'.repeat(201), /^--as: Too big/],
      ['evil\nINJECT  kill  root', '--as must not contain control characters (a newline, a tab, an escape)'],
      ['\u001b[2Jops', '--as must not contain control characters (a newline, a tab, an escape)'],
      ['evil\u202Eadmin', /or text-direction marks$/],
      ['ops\u2067x', /or text-direction marks$/],
    ] as const) {
      const refusal = (() => {
        try {
          cliAudit(as);
        } catch (err) {
          return err as TetherError;
        }
      })();
      expect(refusal?.code, JSON.stringify(as)).toBe('invalid');
      expect(refusal?.message).toMatch(message);
    }
  });
});

describe("a Signal's audit that does not read", () => {
  it('keeps the message, with what of the audit reads', () => {
    expect(salvageSignalAudit({ reason: 'r', audit: { by: 'ops', via: 'cli' } })).toEqual({ reason: 'r', audit: { by: 'ops', via: 'cli' } });
    expect(salvageSignalAudit({ reason: 'r', audit: { by: 'ops', via: 'cli', ticket: 1 } })).toEqual({ reason: 'r', audit: { by: 'ops', via: 'cli' } });
    expect(salvageSignalAudit({ reason: 'r', audit: { by: 'ops', via: 'pager' } })).toEqual({ reason: 'r', audit: { by: 'ops' } });
    for (const audit of [null, 'ops', 42, [], { by: '' }, { via: 'cli' }, { by: 'x'.repeat(201) }]) {
      expect(salvageSignalAudit({ reason: 'r', audit })).toEqual({ reason: 'r' });
    }
  });

  it('leaves a message without an audit, and what is not a message, as they are', () => {
    const message = { reason: 'r' };
    expect(salvageSignalAudit(message)).toBe(message);
    for (const payload of [null, undefined, 'kill', [1]]) expect(salvageSignalAudit(payload)).toBe(payload);
  });
});

describe('a stop or kill Signal that does not read', () => {
  it('stops the run whatever the stop carries, and keeps only what a kill can use', () => {
    for (const payload of [undefined, null, 'stop', 5, ['x']]) {
      expect(controlSchemas.emergencyStop.parse(salvageSignal('emergencyStop', payload))).toMatchObject({ reason: NO_REASON });
    }
    expect(salvageSignal('emergencyStop', { reason: 'look', force: true, audit: { by: 'ops' } })).toEqual({ reason: 'look', audit: { by: 'ops' } });
    expect(salvageSignal('kill', { reason: 'done', force: true })).toEqual({ reason: 'done' });
  });

  it('leaves a kill with no reason to be refused, and every other message as it came', () => {
    expect(controlSchemas.kill.safeParse(salvageSignal('kill', undefined)).success).toBe(false);
    expect(controlSchemas.kill.safeParse(salvageSignal('kill', { force: true })).success).toBe(false);
    const steer = { message: 'hi', extra: 1 };
    expect(salvageSignal('steer', steer)).toBe(steer);
    const stop = { reason: 'fine' };
    expect(salvageStopSignal('emergencyStop', stop)).toBe(stop);
  });
});

describe('a control message as tether history reads it', () => {
  it('reads a stop Signal with no payload as the stop the run applied, and still refuses a bare clear or a bare Update', () => {
    expect(readControl('emergencyStop', null, 'signal')).toMatchObject({ name: 'emergencyStop', data: { reason: NO_REASON } });
    expect(readControl('clearEmergency', null, 'signal')).toEqual({ issue: 'a payload is required' });
    expect(readControl('emergencyStop', undefined, 'update')).toEqual({ issue: 'a payload is required' });
  });
});
