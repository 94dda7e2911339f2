import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { runningDevServerUi } from '../../src/server/running-ui.js';

/** A process whose command line reads like a dev server's: the lookup reads nothing else. */
function fakeDevServer(...args: string[]): ChildProcess {
  return spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)', 'server', 'start-dev', ...args], { stdio: 'ignore' });
}

describe('the UI of a dev server already running here', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });
  const started = async (...args: string[]) => {
    children.push(fakeDevServer(...args));
    await new Promise((resolve) => setTimeout(resolve, 100));
  };

  it('is the --ui-port its command line names, in either spelling', async () => {
    await started('--ip', '127.0.0.1', '--port', '41233', '--ui-port', '41299');
    await started('--port=41234', '--ui-port=41300');
    expect(await runningDevServerUi(41233)).toBe('http://localhost:41299');
    expect(await runningDevServerUi(41234)).toBe('http://localhost:41300');
  });

  it("is the CLI's default, the port + 1000, when none is named; none when it runs headless", async () => {
    await started('-p', '41235');
    await started('--port', '41236', '--headless');
    expect(await runningDevServerUi(41235)).toBe('http://localhost:42235');
    expect(await runningDevServerUi(41236)).toBeNull();
  });

  it('is unknown for a port no dev server here was started on', async () => {
    expect(await runningDevServerUi(41237)).toBeNull();
  });
});
