/** Where traces go, by the OTLP exporter's own variables: the traces URL as is, or the base URL plus /v1/traces. Apart from tracing.ts so a caller can ask without loading OpenTelemetry. */
export function otlpTracesUrl(env: NodeJS.ProcessEnv): string | null {
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) return `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
  return null;
}
