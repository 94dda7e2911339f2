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

/** Temporal is not there: says where it looked and how to start one. */
export function unreachable(address: string, err: unknown): TetherError {
  return new TetherError(
    `cannot reach the Temporal server at ${address} (${(err as Error).message}). Start one with \`tether server\` (or \`tether dev\`), or set TEMPORAL_ADDRESS.`,
    'unreachable',
  );
}
