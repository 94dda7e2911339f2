import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { serverGone, serverSilent } from '../../src/client/errors.js';

/** What grpc-js rejects a call with when nothing answers at the server's address. */
const unavailable = Object.assign(new Error('14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:7233.'), {
  code: 14,
  details: 'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:7233. Resolution note: ',
});

describe('a call the Temporal server did not answer', () => {
  it('says so with gRPC’s reason, whether the SDK wrapped the call’s error or not', () => {
    const wrapped = new ServiceError('Failed to describe workflow', { cause: unavailable });
    for (const err of [unavailable, wrapped, new Error('Failed to describe workflow: unavailable', { cause: wrapped })]) {
      const gone = serverGone(err);
      expect(gone?.code).toBe('unreachable');
      expect(gone?.message).toBe(
        'the Temporal server did not answer (No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:7233.); check that it is running (start one with `tether server` or `tether dev`) and try again',
      );
    }
  });

  it('counts a server that let a worker-free call’s deadline pass as gone', () => {
    const gone = serverGone(serverSilent(5_000));
    expect(gone?.code).toBe('unreachable');
    expect(gone?.message).toMatch(/^the Temporal server did not answer \(no answer in 5 s\); check that it is running/);
  });

  it('leaves every other failure as it is', () => {
    const notFound = Object.assign(new Error('5 NOT_FOUND: workflow not found'), { code: 5 });
    for (const err of [notFound, new ServiceError('Failed to query', { cause: notFound }), new Error('boom'), null, undefined, 'text']) {
      expect(serverGone(err)).toBeNull();
    }
  });
});
