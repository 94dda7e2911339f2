import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';

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
  if (!url) return (current = null);
  const resource = new Resource({ 'service.name': env.OTEL_SERVICE_NAME || serviceName });
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter({ url }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Registers the AsyncLocalStorage context manager too, so activity spans nest under the SDK's.
  provider.register();
  current = { plugin: new OpenTelemetryPlugin({ resource, spanProcessor }), flush: () => provider.forceFlush() };
  return current;
}

/** Where traces go, by the OTLP exporter's own variables: the traces URL as is, or the base URL plus /v1/traces. */
export function otlpTracesUrl(env: NodeJS.ProcessEnv): string | null {
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) return `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
  return null;
}
