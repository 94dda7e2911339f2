import { Client, type Connection } from '@temporalio/client';
import { connectTemporal } from '../../src/server/temporal-connection.js';
import { inject } from 'vitest';

let cached: Promise<{ connection: Connection; client: Client }> | undefined;

/** The global setup's dev server address (`host:port`). */
export function temporalAddress(): string {
  return inject('temporalAddress');
}

/**
 * A Connection and Client to the test run's dev server, shared by every test
 * in this file (one per test worker process). Not closed by tests: the
 * process ends with the file.
 */
export function testConnection(): Promise<{ connection: Connection; client: Client }> {
  cached ??= (async () => {
    const connection = await connectTemporal({ address: inject('temporalAddress') });
    return { connection, client: new Client({ connection, namespace: 'default' }) };
  })();
  cached.catch(() => (cached = undefined));
  return cached;
}

let counter = 0;

/** A task queue no other test (or test process) uses. */
export function uniqueTaskQueue(prefix = 'test'): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}
