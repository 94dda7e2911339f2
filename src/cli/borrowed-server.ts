import { note } from './output.js';
import { listening } from './ports.js';

const CHECK_EVERY_MS = 2_000;

/**
 * Watches a Temporal server this command uses but did not start (another
 * `tether demo` or `tether server` holds it). When that one stops, this
 * command's worker and panel lose their server without a word of their own
 * (the panel answers 503): the terminal says what happened and the way out,
 * once, and again when the server is back.
 */
export function watchBorrowedServer(command: string, port: number, address: string): () => Promise<void> {
  let up = true;
  let checking = false;
  const timer = setInterval(async () => {
    if (checking) return;
    checking = true;
    try {
      const now = await listening(port);
      if (now === up) return;
      up = now;
      note(
        now
          ? `The Temporal server at ${address} answers again: runs go on.`
          : `The Temporal server at ${address}, which this ${command} did not start, stopped: runs wait until it is back. ` +
              `Start it again, or stop this ${command} (Ctrl-C) and run it again to start a server of its own.`,
      );
    } finally {
      checking = false;
    }
  }, CHECK_EVERY_MS).unref();
  return async () => clearInterval(timer);
}
