import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';

/*
 * A long-lived bash that runs scripts for the worker, so the worker forks
 * once rather than once a checkpoint. Forking the worker blocks its event
 * loop until the child runs: with a heap of hundreds of MB on a busy machine
 * that was about 25 ms a fork, and under load the checkpoints' forks were over
 * a third of the worker's main thread (docs/operations.md, "Worker tuning").
 * Bash forks cheaply, and runs each request in the background, so the calls
 * of many runs go on at once.
 *
 * Requests and replies are NUL-separated fields: no argument is ever parsed
 * as shell code, and no path or argument can hold a NUL. A reply (id, exit
 * code, output) is one short write, so replies of parallel requests never
 * interleave (LC_ALL=C: the output is cut to its last 2,000 bytes, not
 * characters). Each request runs under `timeout`, which kills its whole
 * process group. The runner dies with the worker (its stdin closes) and is
 * started again if it dies first.
 */
const RUNNER = String.raw`
while IFS= read -r -d '' id && IFS= read -r -d '' seconds && IFS= read -r -d '' script && IFS= read -r -d '' n; do
  args=()
  for ((i = 0; i < n; i++)); do IFS= read -r -d '' arg; args+=("$arg"); done
  (
    export LC_ALL=C
    out=$(timeout -s KILL "$seconds" sh -c "$script" sh "${'$'}{args[@]}" 2>&1 </dev/null)
    code=$?
    if ((${'$'}{#out} > 2000)); then out=${'$'}{out: -2000}; fi
    printf '%s\0%s\0%s\0' "$id" "$code" "$out"
  ) &
done`;

/** What a script run by the runner came to: its exit code and its output (stdout and stderr together, the last 2,000 bytes). */
export interface ScriptOutcome {
  code: number;
  output: string;
}

interface Pending {
  resolve(outcome: ScriptOutcome): void;
  reject(err: Error): void;
}

class ScriptRunner {
  private child: ChildProcessWithoutNullStreams | null = null;
  private pending = new Map<string, Pending>();
  private next = 0;
  private replies = '';

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  run(script: string, args: string[], timeoutSeconds: number): Promise<ScriptOutcome> {
    if (args.some((a) => a.includes('\0'))) return Promise.reject(new Error('an argument holds a NUL character'));
    const child = this.child ?? this.start();
    const id = String(this.next++);
    this.hold(true);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      child.stdin.write([id, String(timeoutSeconds), script, String(args.length), ...args].map((field) => `${field}\0`).join(''));
    });
  }

  private start(): ChildProcessWithoutNullStreams {
    const child = spawn('bash', ['-c', RUNNER], { env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => this.read(chunk));
    child.stderr.resume();
    this.hold(false);
    const stopped = (why: string) => {
      if (this.child !== child) return;
      this.child = null;
      // Its orphaned requests may still answer into the old pipe: they were failed here, and their replies must not mix with the next runner's.
      child.stdout.removeAllListeners('data');
      child.stdout.destroy();
      for (const waiting of this.pending.values()) waiting.reject(new Error(`the checkpoint runner stopped (${why})`));
      this.pending.clear();
      this.replies = '';
    };
    child.once('error', (err) => stopped(err.message));
    child.once('exit', (code, signal) => stopped(`exit ${code ?? signal}`));
    child.stdin.on('error', (err) => stopped(err.message));
    return child;
  }

  private read(chunk: string): void {
    this.replies += chunk;
    const fields = this.replies.split('\0');
    const whole = fields.length - 1 - ((fields.length - 1) % 3);
    for (let i = 0; i < whole; i += 3) {
      const waiting = this.pending.get(fields[i]);
      this.pending.delete(fields[i]);
      waiting?.resolve({ code: Number(fields[i + 1]), output: fields[i + 2] });
    }
    this.replies = fields.slice(whole).join('\0');
    if (!this.pending.size) this.hold(false);
  }

  /** The runner keeps the process alive only while a request waits: an idle one must not hold up a worker's exit. */
  private hold(busy: boolean): void {
    const child = this.child;
    if (!child) return;
    for (const handle of [child, child.stdin, child.stdout, child.stderr] as Array<{ ref?: () => void; unref?: () => void }>) {
      if (busy) handle.ref?.();
      else handle.unref?.();
    }
  }
}

/** A script runner for this process, started on its first request; every script it runs gets `env`. */
export function scriptRunner(env: NodeJS.ProcessEnv): { run(script: string, args: string[], timeoutSeconds: number): Promise<ScriptOutcome> } {
  let runner: ScriptRunner | undefined;
  return {
    run(script, args, timeoutSeconds) {
      runner ??= new ScriptRunner(env);
      return runner.run(script, args, timeoutSeconds);
    },
  };
}
