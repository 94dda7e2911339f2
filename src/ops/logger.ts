import { Writable } from 'node:stream';
import { DefaultLogger, type LogEntry, type Logger as TemporalLogger } from '@temporalio/worker';
import pino, { type Logger } from 'pino';
import { redactorFromEnv } from '../api/secrets.js';
import { secretBearingEnv } from './secret-env.js';

/**
 * Structured JSON logs on stderr. Every line passes through the redactor of
 * this process's environment, so a key that slips into an error message (as
 * is, JSON-escaped or in a URL) still never reaches the log.
 */
export function createLogger(opts: { name: string; level?: string; env?: NodeJS.ProcessEnv; destination?: NodeJS.WritableStream }): Logger {
  const redactor = redactorFromEnv(secretBearingEnv(opts.env ?? process.env));
  const out = opts.destination ?? process.stderr;
  const redacting = new Writable({
    write(chunk: Buffer, _enc, done) {
      out.write(redactor.text(chunk.toString('utf8')), () => done());
    },
  });
  // The SDK logs failures under `error` (an Error from the workflow's own realm, whose fields JSON leaves out: "error":{}).
  const serializers = { err: pino.stdSerializers.err, error: pino.stdSerializers.err };
  return pino({ name: opts.name, level: opts.level ?? process.env.TETHER_LOG_LEVEL ?? 'info', base: { pid: process.pid }, serializers }, redacting);
}

const LEVELS: Record<string, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Routes the Temporal SDK's logs (workflow `log` calls included, without replay duplicates) into pino. */
export function temporalLogger(logger: Logger): TemporalLogger {
  return new DefaultLogger('INFO', (entry: LogEntry) => {
    const { message, meta } = entry;
    const level = EXPECTED.has(message) ? 'debug' : (LEVELS[entry.level] ?? 'info');
    logger[level]({ ...sanitizeMeta(meta) }, message);
  });
}

/**
 * What the SDK warns of that Tether does on purpose: a worker's own queue
 * (its runs' tools) has activities only. At warn, the line would greet every
 * `tether dev` and `demo` terminal.
 */
const EXPECTED = new Set(['No workflows registered, not polling for workflow tasks']);

function sanitizeMeta(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!meta) return {};
  const { sdkComponent, taskQueue, namespace, workflowId, workflowType, activityType, attempt, runId, step, ...rest } = meta;
  return {
    ...(workflowId ? { runId: workflowId } : runId ? { runId } : {}),
    ...(workflowType ? { workflowType } : {}),
    ...(activityType ? { activity: activityType } : {}),
    ...(attempt !== undefined ? { attempt } : {}),
    ...(step !== undefined ? { step } : {}),
    ...(sdkComponent ? { component: sdkComponent } : {}),
    ...(taskQueue ? { taskQueue } : {}),
    ...(namespace ? { namespace } : {}),
    ...rest,
  };
}
