import { CancellationScope, getExternalWorkflowHandle, log, type SignalDefinition } from '@temporalio/workflow';

/**
 * Signals another workflow (a parent, a sub-agent, the critic) without its
 * failure reaching this run: the other may have ended, and a message it can no
 * longer take must not fail the sender. Sent outside the caller's cancellation
 * scope, so a kill that is ending this run still delivers it. A failure is
 * logged as "could not `what`".
 */
export function signalQuietly<T>(workflowId: string, signal: SignalDefinition<[T]>, payload: T, what: string, level: 'info' | 'warn' = 'warn'): Promise<void> {
  return CancellationScope.nonCancellable(() => getExternalWorkflowHandle(workflowId).signal(signal, payload)).catch((err: unknown) => {
    log[level](`could not ${what}: ${(err as Error).message}`, { to: workflowId });
  });
}
