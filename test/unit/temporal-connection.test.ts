import { createServer, type Socket } from 'node:net';
import { type Interceptor, InterceptingCall, ListenerBuilder, RequesterBuilder } from '@grpc/grpc-js';
import { Connection } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { clientInterceptors } from '../../src/server/temporal-connection.js';
import { freePort } from '../../src/server/free-port.js';
import { eventually } from '../helpers/eventually.js';

/** Records how each attempt that reached the channel ended (a retry after the close never reaches it). */
function attemptCounter(): { interceptor: Interceptor; codes: number[]; details: string[] } {
  const codes: number[] = [];
  const details: string[] = [];
  const interceptor: Interceptor = (options, nextCall) =>
    new InterceptingCall(
      nextCall(options),
      new RequesterBuilder()
        .withStart((metadata, _listener, next) =>
          next(
            metadata,
            new ListenerBuilder()
              .withOnReceiveStatus((status, onStatus) => {
                codes.push(status.code);
                details.push(status.details);
                onStatus(status);
              })
              .build(),
          ),
        )
        .build(),
    );
  return { interceptor, codes, details };
}

describe('a Temporal client connection closed while a call waits to be retried', () => {
  it('rejects the call as cancelled instead of throwing from the retry timer', async () => {
    // Nothing listens on the port, so every attempt ends UNAVAILABLE, which the SDK retries after a pause.
    const counter = attemptCounter();
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, interceptors: [...clientInterceptors(), counter.interceptor] });
    const call = connection.workflowService.describeNamespace({ namespace: 'default' }).then(
      () => null,
      (err: Error & { code?: number }) => err,
    );
    await eventually(
      'the first attempt to fail',
      async () => counter.codes,
      (codes) => codes.length >= 1,
      { timeoutMs: 5_000, intervalMs: 5 },
    );
    await connection.close();
    const err = await call;
    expect(err?.code).toBe(1);
    expect(err?.message).toMatch(/CANCELLED: the call to Temporal was not made: Channel has been shut down/);
    expect(counter.codes[0]).toBe(14);
  });

  it('rejects a call still waiting to connect when the connection closes, which gRPC fails as retryable', async () => {
    // A port that accepts and never answers: the channel stays connecting, so the call waits for it.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      const counter = attemptCounter();
      const connection = Connection.lazy({ address: `127.0.0.1:${port}`, interceptors: [...clientInterceptors(), counter.interceptor] });
      const call = connection.workflowService.getSystemInfo({}).then(
        () => null,
        (err: Error & { code?: number }) => err,
      );
      await eventually(
        'the channel to connect',
        async () => sockets.size,
        (n) => n >= 1,
        { timeoutMs: 5_000, intervalMs: 5 },
      );
      await connection.close();
      const err = await call;
      expect(counter.codes).toEqual([14]);
      expect(counter.details).toEqual(['Channel closed before call started']);
      expect(err?.code).toBe(1);
      expect(err?.message).toMatch(/the call to Temporal was not made/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
