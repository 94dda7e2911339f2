/**
 * An OTLP/HTTP trace collector that keeps what it is sent: the secrets
 * scenario points a worker's exporter at it and searches the raw bodies.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpSink {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  /** Every request body received, as sent. */
  bodies(): Buffer[];
  /** Spans received (bodies the exporter sent as OTLP JSON). */
  spans(): number;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  const bodies: Buffer[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies: () => bodies,
    spans: () => bodies.reduce((n, body) => n + spansIn(body), 0),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

interface OtlpJson {
  resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }>;
}

function spansIn(body: Buffer): number {
  try {
    const doc = JSON.parse(body.toString('utf8')) as OtlpJson;
    return (doc.resourceSpans ?? []).reduce((n, r) => n + (r.scopeSpans ?? []).reduce((m, s) => m + (s.spans?.length ?? 0), 0), 0);
  } catch {
    return 0;
  }
}
