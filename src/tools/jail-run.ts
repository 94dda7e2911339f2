/**
 * Runs one command of a run (a shell tool call, a verification) confined as
 * the run's `sandbox` asks and the machine allows: its own cgroup, the planned
 * sandbox, an allow-listed environment, a capped output log.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { SandboxSpec } from '../api/spec.js';
import { tetherHome } from '../api/home.js';
import { type CallCgroup, createCallCgroup, destroyCallCgroup, limitEvents, procsFiles } from './cgroup.js';
import { toolEnvironment } from './env.js';
import type { SandboxHost } from './host-probe.js';
import { type JailKind, planJail } from './jail-plan.js';
import { OutputLog, safeFileName } from './output-log.js';
import { type ProcessOutcome, type ProcessProgress, runProcess } from './process-runner.js';
import { resolverFilesUnder, secretPaths } from './secret-paths.js';

/** Progress of a confined command: the process's, plus its cgroup so a crash's clean-up can find it. */
export interface JailedProgress extends ProcessProgress {
  cgroup?: CallCgroup;
}

export interface JailedCommand {
  command: string;
  /** Real path of the workspace. */
  workspace: string;
  sandbox: SandboxSpec;
  timeoutMs: number;
  /** Names the output log (`.tether/outputs/<name>.log`) and the cgroup. */
  name: string;
  /** The worker's environment: tools get an allow-listed part of it, and the paths it names as secret are hidden. */
  workerEnv: NodeJS.ProcessEnv;
  host: SandboxHost;
  signal?: AbortSignal;
  maxOutputChars?: number;
  onProgress?: (progress: JailedProgress) => void;
  killGraceMs?: number;
}

export type JailedOutcome =
  | (ProcessOutcome & { ok: true; kind: JailKind; logPath: string; warning?: string; limitNote?: string })
  | { ok: false; error: string };

async function callCgroup(cmd: JailedCommand): Promise<CallCgroup | undefined> {
  if (!cmd.host.cgroup) return undefined;
  const name = `${safeFileName(cmd.name).slice(0, 60)}-${randomBytes(4).toString('hex')}`;
  const limits = { maxProcesses: cmd.sandbox.maxProcesses, memoryBytes: cmd.sandbox.memoryMb * 1024 * 1024 };
  // A cgroup that cannot be made (a full hierarchy, a race with an operator) leaves the rlimits in charge.
  return createCallCgroup(cmd.host.cgroup, name, limits).catch(() => undefined);
}

/** What the kernel did at the call's limits, in words for the model. */
async function describeLimits(group: CallCgroup, sandbox: SandboxSpec): Promise<string | undefined> {
  const { oomKills, forkRefusals } = await limitEvents(group);
  const notes = [
    oomKills ? `memory limit of ${sandbox.memoryMb} MB reached: the kernel killed ${oomKills} process(es)` : '',
    forkRefusals ? `process limit of ${sandbox.maxProcesses} reached: ${forkRefusals} fork(s) refused` : '',
  ].filter(Boolean);
  return notes.length ? notes.join('; ') : undefined;
}

/** Runs a command confined; a sandbox the run requires but the worker lacks is an error value, and nothing runs. */
export async function runJailed(cmd: JailedCommand): Promise<JailedOutcome> {
  const cgroup = await callCgroup(cmd);
  const hidden = secretPaths(cmd.workerEnv, { tetherHome: tetherHome(cmd.workerEnv), home: cmd.workerEnv.HOME });
  try {
    const planned = planJail(
      {
        command: cmd.command,
        workspace: cmd.workspace,
        sandbox: cmd.sandbox,
        timeoutMs: cmd.timeoutMs,
        hidden,
        restore: cmd.sandbox.network ? resolverFilesUnder(hidden) : [],
        cgroupProcs: cgroup ? procsFiles(cgroup) : [],
        cgroupLimits: {
          memory: Boolean(cgroup?.dirs.memory),
          processes: Boolean(cgroup?.dirs.pids),
          cpus: cgroup?.dirs.cpu && cmd.host.cgroup ? cmd.host.cgroup.cpus : os.availableParallelism(),
        },
      },
      cmd.host,
    );
    if (!planned.ok) return { ok: false, error: planned.error };
    const { plan } = planned;
    const log = await OutputLog.create(cmd.workspace, cmd.name);
    const outcome = await runProcess({
      argv: plan.argv,
      cwd: cmd.workspace,
      env: toolEnvironment(cmd.workerEnv, { home: plan.home, tmpdir: plan.tmpdir }),
      timeoutMs: cmd.timeoutMs,
      signal: cmd.signal,
      log,
      maxOutputChars: cmd.maxOutputChars,
      onProgress: cmd.onProgress && ((p) => cmd.onProgress!({ ...p, ...(cgroup ? { cgroup } : {}) })),
      killGraceMs: cmd.killGraceMs,
      cgroup,
      wrapped: plan.kind !== 'process-group',
    });
    const limitNote = cgroup ? await describeLimits(cgroup, cmd.sandbox) : undefined;
    return { ...outcome, ok: true, kind: plan.kind, logPath: log.relPath, warning: plan.warning, limitNote };
  } finally {
    if (cgroup) await destroyCallCgroup(cgroup);
  }
}

/** How a command ended, in words: a sandbox launcher reports a signal death as 128 + the signal. */
export function describeExit(outcome: Pick<ProcessOutcome, 'exitCode' | 'signal'>): string {
  if (outcome.signal) return `command killed by ${outcome.signal}`;
  const code = outcome.exitCode ?? -1;
  const signal = code > 128 ? Object.entries(os.constants.signals).find(([, n]) => n === code - 128)?.[0] : undefined;
  return signal ? `command exited with ${code} (killed by ${signal})` : `command exited with ${code}`;
}
