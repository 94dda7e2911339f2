import type { Connection } from '@temporalio/client';
import { probeTcp } from '../server/tcp-probe.js';
import { connectTemporal } from '../server/temporal-connection.js';
import { unreachable } from './errors.js';

/** A connection to the Temporal server at `address`, or the `unreachable` error that says how to have one there. */
export async function connectOrExplain(address: string): Promise<Connection> {
  try {
    // The 5 s deadline is for a slow or distant server; one that is not running is known as soon as its port refuses.
    await probeTcp(address);
    return await connectTemporal({ address, connectTimeout: 5_000 });
  } catch (err) {
    throw unreachable(address, err);
  }
}
