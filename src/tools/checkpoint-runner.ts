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
 * A request costs bash two forks and no exec: the script is evaluated in the
 * request's own subshell. A `timeout` and an `sh -c` for each request had
 * cost three times that (about 2 ms of CPU a checkpoint; measured in
 * docs/operations.md). Job control (`set -m`) puts each request in a
 * process group of its own, whose id the runner reports as it starts; the
 * worker kills that group when the request's time is up, and the runner kills
 * every group still running when its stdin closes (the worker stopped or died).
 *
 * Requests and messages are NUL-separated fields: no argument is ever parsed
 * as shell code, and no path or argument can hold a NUL. Every message is
 * three fields and one short write, so messages of parallel requests never
 * interleave: `started, id, group` as a request starts, and `id, exit code,
 * output` as it ends (LC_ALL=C: the output is cut to its last 2,000 bytes,
 * not characters). The runner is started again if it dies first.
 */
const RUNNER = String.raw`
set -m
while IFS= read -r -d '' id && IFS= read -r -d '' script && IFS= read -r -d '' n; do
  args=()
  for ((i = 0; i < n; i++)); do IFS= read -r -d '' arg; args+=("$arg"); done
  (
    export LC_ALL=C
    out=$(set -- "${'$'}{args[@]}"; eval "$script" 2>&1 </dev/null)
    code=$?
    if ((${'$'}{#out} > 2000)); then out=${'$'}{out: -2000}; fi
    printf '%s\0%s\0%s\0' "$id" "$code" "$out"
  ) &
  printf 'started\0%s\0%s\0' "$id" "$!"
done
for group in $(jobs -p); do kill -KILL -- "-$group"; done 2>/dev/null`;

/** The exit code of a request killed when its time was up: 128 + SIGKILL, as a shell reports it. */
const KILLED = 137;

/** What a script run by the runner came to: its exit code and its output (stdout and stderr together, the last 2,000 bytes). */
export interface ScriptOutcome {
  code: number;
  output: string;
}

interface Pending {
  resolve(outcome: ScriptOutcome): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
  /** The request's process group, once the runner has said it started. */
  group?: number;
}

class ScriptRunner {
  private child: ChildProcessWithoutNullStreams | null = null;
  private pending = new Map<string, Pending>();
  /** Requests whose time ran out before the runner said they started: killed as that word comes. */
  private killOnStart = new Set<string>();
  private next = 0;
  private messages = '';

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  run(script: string, args: string[], timeoutSeconds: number): Promise<ScriptOutcome> {
    if (args.some((a) => a.includes('\0'))) return Promise.reject(new Error('an argument holds a NUL character'));
    const child = this.child ?? this.start();
    const id = String(this.next++);
    this.hold(true);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.expire(id, timeoutSeconds), timeoutSeconds * 1000).unref();
      this.pending.set(id, { resolve, reject, timer });
      child.stdin.write([id, script, String(args.length), ...args].map((field) => `${field}\0`).join(''));
    });
  }

  /** Kills a request's process group (git and all it started) once its time is up; its answer is the kill. */
  private expire(id: string, timeoutSeconds: number): void {
    const waiting = this.pending.get(id);
    if (!waiting) return;
    this.pending.delete(id);
    if (waiting.group === undefined) this.killOnStart.add(id);
    else killGroup(waiting.group);
    waiting.resolve({ code: KILLED, output: `killed: still running after ${timeoutSeconds} s` });
    if (!this.pending.size) this.hold(false);
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
      for (const waiting of this.pending.values()) {
        clearTimeout(waiting.timer);
        waiting.reject(new Error(`the checkpoint runner stopped (${why})`));
      }
      this.pending.clear();
      this.killOnStart.clear();
      this.messages = '';
    };
    child.once('error', (err) => stopped(err.message));
    child.once('exit', (code, signal) => stopped(`exit ${code ?? signal}`));
    child.stdin.on('error', (err) => stopped(err.message));
    return child;
  }

  private read(chunk: string): void {
    this.messages += chunk;
    const fields = this.messages.split('\0');
    const whole = fields.length - 1 - ((fields.length - 1) % 3);
    for (let i = 0; i < whole; i += 3) {
      if (fields[i] === 'started') this.started(fields[i + 1], Number(fields[i + 2]));
      else this.answered(fields[i], { code: Number(fields[i + 1]), output: fields[i + 2] });
    }
    this.messages = fields.slice(whole).join('\0');
    if (!this.pending.size) this.hold(false);
  }

  private started(id: string, group: number): void {
    const waiting = this.pending.get(id);
    if (waiting) waiting.group = group;
    else if (this.killOnStart.delete(id)) killGroup(group);
  }

  private answered(id: string, outcome: ScriptOutcome): void {
    const waiting = this.pending.get(id);
    if (!waiting) return;
    this.pending.delete(id);
    clearTimeout(waiting.timer);
    waiting.resolve(outcome);
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

function killGroup(group: number): void {
  try {
    process.kill(-group, 'SIGKILL');
  } catch {
    // It ended on its own meanwhile.
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
