import type { RunStatus } from '../api/types.js';
import { terminalText, usd } from './output.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * The live progress line on stderr: step, tool, tokens, cost, elapsed. On a
 * TTY it redraws in place with a spinner; elsewhere it prints a line only
 * when something changed, so logs stay readable.
 */
export function createProgressLine(stream: NodeJS.WriteStream = process.stderr) {
  const tty = Boolean(stream.isTTY);
  const started = Date.now();
  let last = '';
  let frame = 0;
  let drawn = false;
  // While a model call's tokens are written, the line is not redrawn (it would erase them).
  let streaming = false;
  const render = (status: RunStatus) => {
    const elapsed = Math.round((Date.now() - started) / 1000);
    const tool = status.lastTool ? ` · ${terminalText(status.lastTool, false)}` : '';
    return `step ${status.step}/${status.maxSteps}${tool} · ${status.usage.totalTokens} tok · ${usd(status.costUsd)} · ${status.state} · ${elapsed}s`;
  };
  return {
    update(status: RunStatus) {
      if (streaming) return;
      const text = render(status);
      if (tty) {
        stream.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${text}`);
        drawn = true;
      } else {
        const key = text.replace(/ · \d+s$/, '');
        if (key !== last) stream.write(`${text}\n`);
        last = key;
      }
    },
    message(text: string) {
      if (tty && drawn) stream.write('\r\x1b[2K');
      drawn = false;
      if (streaming) stream.write('\n');
      streaming = false;
      stream.write(`${terminalText(text)}\n`);
    },
    /** Live text of a model call, written as it arrives; the next message or `endTokens` ends its line. */
    tokens(text: string) {
      if (tty && drawn) stream.write('\r\x1b[2K');
      drawn = false;
      streaming = true;
      stream.write(terminalText(text));
    },
    endTokens() {
      if (streaming) stream.write('\n');
      streaming = false;
    },
    done() {
      if (tty && drawn) stream.write('\r\x1b[2K');
      if (streaming) stream.write('\n');
      drawn = false;
      streaming = false;
    },
  };
}
