import { describe, expect, it } from 'vitest';
import { VerifyGate } from '../../src/run/verify-gate.js';

const failed = { passed: false, attempts: 1, exitCode: 1, output: '1 test failed' };

describe('the verification gate', () => {
  it('numbers each attempt', () => {
    const gate = new VerifyGate({ command: 'npm test', maxAttempts: 3 });
    expect([gate.begin(), gate.begin()]).toEqual([1, 2]);
    expect(gate.used).toBe(2);
  });

  it('tells the model what failed and how many attempts it has had', () => {
    const gate = new VerifyGate({ command: 'npm test', maxAttempts: 3 });
    expect(gate.judge(failed, gate.begin())).toEqual({
      passed: false,
      feedback: 'Verification failed (attempt 1 of 3): `npm test` exited with 1.\n1 test failed',
      exhausted: false,
      cause: 'verification failed once: npm test',
    });
  });

  it('is exhausted at the last attempt', () => {
    const gate = new VerifyGate({ command: 'npm test', maxAttempts: 2 });
    gate.begin();
    expect(gate.judge(failed, gate.begin())).toMatchObject({ exhausted: true, cause: 'verification failed 2 times: npm test' });
  });

  it('passes whatever the attempt', () => {
    const gate = new VerifyGate({ command: 'npm test', maxAttempts: 1 });
    expect(gate.judge({ ...failed, passed: true, exitCode: 0 }, gate.begin())).toEqual({ passed: true });
  });

  it('gives back an attempt its worker never finished, and continues from the carried count', () => {
    const gate = new VerifyGate({ command: 'npm test', maxAttempts: 3 }, 1);
    gate.begin();
    gate.abandon();
    expect(gate.begin()).toBe(2);
  });
});
