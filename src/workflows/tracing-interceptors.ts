import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import { SdkFlags } from '@temporalio/workflow/lib/flags.js';
import { getActivator } from '@temporalio/workflow/lib/global-attributes.js';
import type {
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { tracingInterceptorsAlways } from './lean-history.js';
import { unrecordedTracer } from './tracing.js';
import { workerTraces } from './worker-traces.js';

/*
 * The OpenTelemetry workflow interceptors, in every worker's bundle whether it
 * exports traces or not. They are workflow code: they answer an Update a few
 * steps later than the bare handler does, so a run records its commands in
 * another order with them than without, and a run recorded with one bundle
 * fails its workflow tasks on the other. A run started now takes them always
 * (patch `tracing-interceptors-always`); on a worker that exports no traces
 * they take the same steps with spans that record nothing. A run recorded
 * before takes them only where it always did: on a worker that exports traces.
 */

class UnrecordedInbound extends OpenTelemetryInboundInterceptor {
  protected override readonly tracer = unrecordedTracer;
}

class UnrecordedOutbound extends OpenTelemetryOutboundInterceptor {
  protected override readonly tracer = unrecordedTracer;
}

function tracingInterceptors(recorded: boolean) {
  return recorded
    ? { inbound: new OpenTelemetryInboundInterceptor(), outbound: new OpenTelemetryOutboundInterceptor(), internals: new OpenTelemetryInternalsInterceptor() }
    : { inbound: new UnrecordedInbound(), outbound: new UnrecordedOutbound(), internals: new OpenTelemetryInternalsInterceptor() };
}

type Method = (input: unknown, next: (input: unknown) => unknown) => unknown;

/** The `names` methods of an interceptor that go to `target()`'s once the run has one, and straight on otherwise: no extra step either way. */
function gated<T extends object>(target: () => T | undefined, names: Array<keyof T & string>): T {
  const methods = names.map((name) => {
    const method: Method = (input, next) => {
      const to = target();
      const own = to?.[name] as Method | undefined;
      return own ? own.call(to, input, next) : next(input);
    };
    return [name, method];
  });
  return Object.fromEntries(methods) as T;
}

export const interceptors = (): WorkflowInterceptors => {
  let traced: { inbound: WorkflowInboundCallsInterceptor; outbound: WorkflowOutboundCallsInterceptor; internals: WorkflowInternalsInterceptor } | undefined;
  const inbound = gated<WorkflowInboundCallsInterceptor>(() => traced?.inbound, ['handleSignal', 'handleUpdate', 'validateUpdate', 'handleQuery']);
  // The run decides as it starts, before any handler or command of its own.
  inbound.execute = (input, next) => {
    if (tracingInterceptorsAlways() || workerTraces.on) {
      // The interceptors trace Updates and queries under an SDK flag that a workflow task records when it first
      // reads it. A task that reads it first in a query or in the validator of a refused Update ends in no history
      // event, so the flag is never recorded; a replay then handles the next Update without the interceptors, and
      // the run fails every task after ("Update machine does not handle this event"). Read here, the first task records it.
      getActivator().hasFlag(SdkFlags.OpenTelemetryInterceptorsInstrumentsAllMethods);
      traced = tracingInterceptors(workerTraces.on);
      return traced.inbound.execute!(input, next);
    }
    return next(input);
  };
  const outbound = gated<WorkflowOutboundCallsInterceptor>(
    () => traced?.outbound,
    [
      'scheduleActivity',
      'scheduleLocalActivity',
      'startNexusOperation',
      'startChildWorkflowExecution',
      'continueAsNew',
      'signalWorkflow',
      'getLogAttributes',
      'getMetricTags',
    ],
  );

  const internals = gated<WorkflowInternalsInterceptor>(() => traced?.internals, ['dispose']);
  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};
