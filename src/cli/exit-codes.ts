/** The one table of exit codes, for every verb; `tether --help` prints it and README.md repeats it. */
export const EXIT = { ok: 0, failed: 1, usage: 2, blocked: 10, cancelled: 11, continued: 12, forced: 130 } as const;

/** Each exit code and when a verb returns it. */
export const EXIT_CODES: ReadonlyArray<readonly [number, string]> = [
  [EXIT.ok, 'done; `run --wait`: the run completed; a service stopped cleanly on Ctrl-C or SIGTERM'],
  [
    EXIT.failed,
    'failed: Temporal unreachable, unknown run, a control message the run refused, a busy port, a failed check (doctor); `run --wait`: the run ended failed, killed, timeout, stuck or needs_fix',
  ],
  [EXIT.usage, 'invalid input, from every verb: an unknown option, a missing argument, a bad flag value, an invalid RunSpec or control message'],
  [EXIT.blocked, '`run --wait`: the run waits for a person: blocked on a question (`tether answer`) or a tool call awaiting approval (`tether decide`)'],
  [
    EXIT.cancelled,
    '`run --wait`: interrupted by SIGINT or SIGTERM (the run is cancelled unless --detach-on-interrupt, or its server does not answer the cancel), or the run was cancelled from elsewhere',
  ],
  [EXIT.continued, '`run --wait --no-follow`: the run continued as new'],
  [EXIT.forced, 'a second Ctrl-C forced a service to exit before its clean stop finished'],
];

/** The table as `--help` shows it. */
export function exitCodeHelp(): string {
  return ['Exit codes:', ...EXIT_CODES.map(([code, meaning]) => `  ${String(code).padStart(3)}  ${meaning}`)].join('\n');
}
