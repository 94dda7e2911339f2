import { ApplicationFailure, log, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import { historyRoomProblem, jsonBytes } from '../api/payload-limits.js';
import { CONTROL_NAMES, type ControlName, salvageSafetySignal, salvageSignalAudit, salvageStopSignal } from '../api/control.js';
import { controlSignals, controlUpdates, emergencyStateQuery, forkSourceQuery, modelContextQuery, statusQuery, transcriptQuery } from '../api/messages.js';
import { systemPromptOf } from '../run/prompt.js';
import type { RunState } from '../run/run-state.js';
import { ControlRejected } from '../run/run-types.js';

/** A refused message as the Update's answer, marked not retryable: the same message would be refused again. */
function refuse(err: unknown): never {
  if (err instanceof ControlRejected) throw ApplicationFailure.create({ type: err.name, message: err.message, nonRetryable: true });
  throw err;
}

const CARRIES_TEXT: ReadonlySet<ControlName> = new Set(['steer', 'answer', 'decideTool']);

/**
 * Wires every control message to one handler, reachable as a Signal and as an
 * Update. Handlers are thin: validate, apply to the state machine, tell the
 * run loop (`onApplied`) so it can cancel in-flight work on a kill.
 */
export function registerControlHandlers(run: RunState, onApplied: (name: ControlName, via: 'signal' | 'update') => void): void {
  for (const name of CONTROL_NAMES) {
    const validate = (payload: unknown) => {
      // What carries text a person wrote grows the history; a stop, a clear or a kill must always land.
      const tooMuch = CARRIES_TEXT.has(name) ? historyRoomProblem(workflowInfo().historySize, jsonBytes(payload ?? null)) : null;
      if (tooMuch) throw new ControlRejected(`${name}: ${tooMuch}`);
      return run.validate(name, payload);
    };
    const apply = (payload: unknown, via: 'signal' | 'update') => {
      const valid = validate(payload);
      const effect = run.apply(name, valid, Date.now());
      // patched(): runs recorded before kept the calls before a clear in their loop guard's window.
      if (name === 'clearEmergency' && patched('clear-forgets-loops')) run.forgetLoops();
      log.info(`control ${name} (${via}): ${effect}`, { runId: run.runId, control: name });
      onApplied(name, via);
    };
    setHandler(controlSignals[name], (payload: unknown) => {
      try {
        const whole = salvageStopSignal(name, payload);
        // patched(): a stop with no payload or with extra fields stays ignored in the histories recorded before.
        const sent = whole !== payload && patched('stop-signals-salvaged-whole') ? whole : payload;
        const salvaged = salvageSafetySignal(name, sent);
        // patched(): a stop whose reason was refused stays refused in the histories recorded before.
        const safe = salvaged !== sent && !patched('safety-signals-salvaged') ? sent : salvaged;
        const audited = salvageSignalAudit(safe);
        // patched(): a signal whose audit did not read stays ignored in the histories recorded before.
        apply(audited !== safe && patched('signal-audit-salvaged') ? audited : safe, 'signal');
      } catch (err) {
        // A signal cannot answer its sender, and a bad one must never fail the workflow task.
        log.warn(`ignored ${name} signal: ${(err as Error).message}`, { runId: run.runId, control: name });
        run.noteIgnoredSignal(name, (err as Error).message, Date.now());
      }
    });
    setHandler(
      controlUpdates[name],
      (payload: unknown) => {
        try {
          apply(payload, 'update');
        } catch (err) {
          refuse(err);
        }
        return run.status(Date.now());
      },
      {
        validator: (payload: unknown) => {
          try {
            validate(payload);
          } catch (err) {
            refuse(err);
          }
        },
      },
    );
  }
  setHandler(statusQuery, () => run.status(Date.now()));
  setHandler(emergencyStateQuery, () => run.safety.emergencyState());
  setHandler(transcriptQuery, () => run.transcript.slice());
  setHandler(modelContextQuery, () => ({ epoch: run.transcriptEpoch, messages: run.transcript.slice(), system: systemPromptOf(run.spec) }));
  setHandler(forkSourceQuery, () => run.forkSource());
}
