/**
 * Output piped to a reader that stops early (`tether list | head -1`) makes
 * every later write fail with EPIPE, which Node raises as an unhandled error:
 * a stack trace and exit 1 for a command that did its job. The rest of the
 * output has nowhere to go, so it is dropped and the verb ends as it would
 * have; a service keeps running (it must still stop what it started).
 */
export function dropOutputOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}
