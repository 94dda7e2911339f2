import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type ReadableSpan, type Span, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Context } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryPlugin,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions.js';
import { otlpTracesUrl } from './otlp-url.js';

export { otlpTracesUrl } from './otlp-url.js';

/**
 * OpenTelemetry tracing for one process, on when OTEL_EXPORTER_OTLP_ENDPOINT
 * (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. The plugin links client,
 * workflow and activity spans through Temporal headers; workflow spans leave
 * the sandbox through a sink and share this process's exporter.
 */
export interface Tracing {
  /** Give to `new Client` as `plugins`. */
  plugin: OpenTelemetryPlugin;
  /**
   * Give to `Worker.create`: what the plugin gives a worker but its workflow
   * interceptors, which every worker's bundle has whether it traces or not
   * (src/workflows/tracing-interceptors.ts): the activities' interceptors and
   * the sink that exports workflow spans.
   */
  worker: { interceptors: NonNullable<WorkerOptions['interceptors']>; sinks: InjectedSinks<OpenTelemetrySinks> };
  /** Sends every span still buffered; call before the process exits. */
  flush(): Promise<void>;
}

let current: Tracing | null | undefined;

/** The process's tracing, set up on first call; null when no OTLP endpoint is configured. */
export function tracingFromEnv(serviceName: string, env: NodeJS.ProcessEnv = process.env): Tracing | null {
  if (current !== undefined) return current;
  const url = otlpTracesUrl(env);
  if (!url) {
    current = null;
    return current;
  }
  const resource = new Resource({ 'service.name': env.OTEL_SERVICE_NAME || serviceName });
  const spanProcessor = new ScalarAttributesOnly(new BatchSpanProcessor(new OTLPTraceExporter({ url })));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Registers the AsyncLocalStorage context manager too, so activity spans nest under the SDK's.
  provider.register();
  const worker: Tracing['worker'] = {
    interceptors: {
      client: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
    },
    sinks: { exporter: makeWorkflowExporter(spanProcessor, resource) },
  };
  current = { plugin: new OpenTelemetryPlugin({ resource, spanProcessor }), worker, flush: () => provider.forceFlush() };
  return current;
}

/**
 * Drops structured attributes before export. The SDK's workflow span exporter
 * copies the whole WorkflowInfo into each workflow span, decoded: the memo
 * (a run's goal), search attributes, the last result and failure. None of it
 * belongs in a trace, and OpenTelemetry attributes are meant to be scalars.
 */
class ScalarAttributesOnly implements SpanProcessor {
  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    this.next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    const attributes = span.attributes as Record<string, unknown>;
    for (const [key, value] of Object.entries(attributes)) {
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) delete attributes[key];
    }
    this.next.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}
