import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type ReadableSpan, type Span, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Context } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { otlpTracesUrl } from './otlp-url.js';

export { otlpTracesUrl } from './otlp-url.js';

/**
 * OpenTelemetry tracing for one process, on when OTEL_EXPORTER_OTLP_ENDPOINT
 * (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. The plugin links client,
 * workflow and activity spans through Temporal headers; workflow spans leave
 * the sandbox through a sink and share this process's exporter.
 */
export interface Tracing {
  /** Give to `Worker.create` and `new Client` as `plugins`. */
  plugin: OpenTelemetryPlugin;
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
  current = { plugin: new OpenTelemetryPlugin({ resource, spanProcessor }), flush: () => provider.forceFlush() };
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
