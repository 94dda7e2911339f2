import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { descendants, isProcessAlive } from '../../src/tools/process-tree.js';
import { eventually } from './eventually.js';

const CLI = fileURLToPath(new URL('../../bin/tether.js', import.meta.url));

/** A `tether` command running in the background: its output so far, its process tree, and its end. */
export interface CliProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (a signal's number + 128 when a signal ended it). */
  exited: Promise<number>;
  /** Waits until the output contains `text`; fails the test after `timeoutMs`. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Every process below the command (the Temporal server it started, tools, …), as seen now. */
  tree(): number[];
  /** Types Ctrl-C on the terminal (only with `pty`). */
  ctrlC(): void;
}

/**
 * Starts `tether <args>`, in a real pseudo-terminal when `pty` is set
 * (util-linux `script`, so Ctrl-C goes through the terminal's line discipline
 * to the whole foreground group, as when a person presses it).
 */
export function startCli(args: string[], opts: { env?: NodeJS.ProcessEnv; pty?: boolean } = {}): CliProcess {
  // `exec`: a shell left between the terminal and tether gets the Ctrl-C too,
  // and dash then ends itself with SIGINT (exit 130) whatever tether exits with.
  const command = `exec ${[process.execPath, CLI, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ')}`;
  const child = opts.pty
    ? spawn('script', ['-qfec', command, '/dev/null'], { env: { ...(opts.env ?? process.env), SHELL: '/bin/sh' }, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(process.execPath, [CLI, ...args], { env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  // 'close', not 'exit': the output is all read by then.
  const exited = new Promise<number>((resolve) => child.once('close', (code, signal) => resolve(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15))));
  return {
    child,
    output: () => output,
    exited,
    waitFor: async (text, timeoutMs = 90_000) => {
      await eventually(
        `tether ${args[0]} to print ${text}`,
        () => output,
        (o) => (typeof text === 'string' ? o.includes(text) : text.test(o)),
        {
          timeoutMs,
          intervalMs: 100,
        },
      );
    },
    tree: () => [child.pid!, ...descendants(child.pid!)],
    ctrlC: () => child.stdin!.write('\x03'),
  };
}

/** Waits until none of `pids` is alive; fails naming the survivors. */
export async function allGone(pids: number[], timeoutMs = 15_000): Promise<void> {
  await eventually(
    'every process of the tree to be gone',
    () => pids.filter(isProcessAlive),
    (alive) => alive.length === 0,
    { timeoutMs },
  );
}

/** What `tether <args>` printed and its exit code, once it has ended. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `tether <args>` to its end, with `env`. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
