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
