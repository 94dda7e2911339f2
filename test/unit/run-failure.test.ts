import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, RetryState } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { resultFromFailure } from '../../src/client/runs.js';

describe('reading how a run failed', () => {
  it('reads the RunResult a failed run carries', () => {
    const result = { runId: 'r', status: 'killed', cause: 'enough', steps: 2, costUsd: 0.1, usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } };
    const failed = new WorkflowFailedError(
      'failed',
      ApplicationFailure.create({ type: 'RunKilled', message: 'killed', details: [result] }),
      RetryState.NON_RETRYABLE_FAILURE,
    );
    expect(resultFromFailure(failed, 'r')).toEqual(result);
  });

  it("says that a sealed failure needs the workers' key, not the SDK's stand-in 'Encoded failure'", () => {
    const sealed = new WorkflowFailedError('failed', ApplicationFailure.create({ message: 'Encoded failure' }), RetryState.NON_RETRYABLE_FAILURE);
    expect(() => resultFromFailure(sealed, 'r')).toThrow(
      /run r ended with a failure this client cannot read: it is encrypted, and no key here opens it. Set TETHER_ENCRYPTION_KEY/,
    );
  });
});
