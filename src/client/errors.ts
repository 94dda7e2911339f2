/** An operator-facing failure: the message says what went wrong and what to do. Its own module, so a caller can name it without loading the Temporal client. */
export class TetherError extends Error {
  constructor(
    message: string,
    readonly code: 'not_found' | 'invalid' | 'rejected' | 'unreachable' | 'conflict',
  ) {
    super(message);
    this.name = 'TetherError';
  }
}

/** A request about a run that has already ended: refused, and nothing to do about it. */
export class RunEndedError extends TetherError {
  constructor(message: string) {
    super(message, 'rejected');
    this.name = 'RunEndedError';
  }
}

/** Temporal is not there: says where it looked and how to start one there. */
export function unreachable(address: string, err: unknown): TetherError {
  return new TetherError(`cannot reach the Temporal server at ${address} (${(err as Error).message}). ${howToStart(address)}`, 'unreachable');
}

/** How to have a server at `address`: started here on its port, or, on another host, up there; or another address. */
export function howToStart(address: string): string {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(address);
  const host = match?.[1] ?? match?.[2];
  const port = match?.[3];
  if (!host || !port || !/^(127\.\d+\.\d+\.\d+|localhost|::1|0\.0\.0\.0)$/i.test(host)) {
    return `Check that the server at ${address} is up, or set TEMPORAL_ADDRESS to one that is.`;
  }
  const flag = port === '7233' ? '' : ` --port ${port}`;
  return `Start one with \`tether server${flag}\` (or \`tether dev${flag}\`), or set TEMPORAL_ADDRESS.`;
}

/** A Temporal server that does not answer (stopped, crashed, restarting): a caller can wait for it to come back. */
export class ServerGoneError extends TetherError {
  constructor(detail: string) {
    super(
      `the Temporal server did not answer (${detail}); check that it is running (start one with \`tether server\` or \`tether dev\`) and try again`,
      'unreachable',
    );
    this.name = 'ServerGoneError';
  }
}

/** A server that took a call and let its deadline pass: on a call that needs no worker, as good as gone. */
export const serverSilent = (ms: number) => new ServerGoneError(`no answer in ${ms / 1000} s`);

/** gRPC's status for a server that is not there (refused, reset, or still connecting). */
const GRPC_UNAVAILABLE = 14;

/**
 * A call the Temporal server did not answer because it is gone (stopped,
 * crashed, restarting), as a TetherError that says so and what to do; null
 * for any other failure. The SDK's own wrapping ("Failed to describe
 * workflow") hides that cause, and the raw service calls answer with gRPC's
 * text ("14 UNAVAILABLE: …").
 */
export function serverGone(err: unknown): ServerGoneError | null {
  if (err instanceof ServerGoneError) return err;
  const causes = [err];
  for (let e = err; causes.length < 4 && (e as { cause?: unknown } | null)?.cause; e = (e as { cause: unknown }).cause)
    causes.push((e as { cause: unknown }).cause);
  const grpc = causes.find((e) => (e as { code?: unknown } | null)?.code === GRPC_UNAVAILABLE) as { details?: string; message?: string } | undefined;
  if (!grpc) return null;
  // grpc-js ends the details with an empty "Resolution note: " when it has none.
  return new ServerGoneError((grpc.details || grpc.message || 'unavailable').replace(/\s*Resolution note:\s*$/, ''));
}

/**
 * A namespace the server does not have, from any call (the SDK's
 * NamespaceNotFoundError, or a raw service call's NOT_FOUND): said with the
 * way out; null for any other failure. Read from the words, so that the CLI
 * need not load the Temporal client to name it.
 */
export function namespaceMissing(err: unknown): TetherError | null {
  const e = err as { namespace?: unknown; message?: string; details?: string; cause?: { details?: string; message?: string } } | null;
  const said = `${e?.message ?? ''} ${e?.details ?? ''} ${e?.cause?.details ?? ''} ${e?.cause?.message ?? ''}`;
  const namespace =
    typeof e?.namespace === 'string' && (err as Error).name === 'NamespaceNotFoundError' ? e.namespace : /Namespace (\S+?)\.? is not found/i.exec(said)?.[1];
  if (!namespace) return null;
  return new TetherError(
    `namespace ${namespace} does not exist on this Temporal server: set TEMPORAL_NAMESPACE to one that does, or create it (temporal operator namespace create --namespace ${namespace})`,
    'not_found',
  );
}
