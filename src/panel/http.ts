import { QueryNotRegisteredError, ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import type { Context, MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { secureHeaders } from 'hono/secure-headers';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import { EncryptionKeyError } from '../api/payload-refusal.js';
import { describeIssues } from '../api/spec.js';
import { serverGone, TetherError } from '../client/errors.js';
import { NOT_A_RUN } from '../client/run-status.js';

/** An HTTP failure with the status to answer. */
export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Headers on every response: nothing inline, nothing framed, nothing leaked in
 * a referrer, nothing cached. Only these: secureHeaders' other defaults are off
 * so the panel's headers stay what they were.
 */
export function panelSecurityHeaders(): MiddlewareHandler {
  const headers = secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      connectSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'self'"],
    },
    xContentTypeOptions: true,
    referrerPolicy: 'no-referrer',
    xFrameOptions: 'DENY',
    crossOriginResourcePolicy: false,
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    strictTransportSecurity: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
  });
  return async (c, next) => {
    await headers(c, async () => {
      await next();
      c.res.headers.set('cache-control', 'no-store');
    });
  };
}

/** A `%` escape that does not decode is a client's mistake: 400, before anything reads the URL. */
export function rejectMalformedUrl(): MiddlewareHandler {
  return async (c, next) => {
    const url = c.req.url;
    const rest = url.slice(url.indexOf('/', url.indexOf('//') + 2));
    try {
      for (const part of rest.split(/[/?&=#]/)) decodeURIComponent(part.replaceAll('+', ' '));
    } catch {
      return c.json({ error: 'malformed URL: a %-escape does not decode' }, 400);
    }
    await next();
  };
}

const GRPC = { INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, UNAVAILABLE: 14 } as const;

/**
 * The status for a failure. Input the client got wrong is a 4xx whatever layer
 * noticed it (our validation, Temporal's), a Temporal that does not answer is a
 * 503, and only our own bugs are 500.
 */
export function statusOf(err: unknown): ContentfulStatusCode {
  if (err instanceof HttpError) return err.status;
  if (err instanceof TetherError) return ({ not_found: 404, conflict: 409, unreachable: 503, invalid: 400, rejected: 400 } as const)[err.code];
  if (err instanceof WorkflowNotFoundError || err instanceof QueryNotRegisteredError) return 404;
  // The panel lacks the key the run was sealed with: its set-up, not the request, and not a bug.
  if (err instanceof EncryptionKeyError) return 503;
  const code = err instanceof ServiceError ? (err.cause as { code?: number } | undefined)?.code : undefined;
  if (code === GRPC.INVALID_ARGUMENT) return 400;
  if (code === GRPC.NOT_FOUND) return 404;
  if (code === GRPC.UNAVAILABLE || code === GRPC.DEADLINE_EXCEEDED) return 503;
  return 500;
}

/** The panel's error answer: `{ error }` with the status `statusOf` chooses. */
export function errorResponse(failure: Error, c: Context): Response {
  if (failure instanceof HTTPException) return failure.getResponse();
  const err = serverGone(failure) ?? failure;
  const status = statusOf(err);
  const message = err instanceof QueryNotRegisteredError ? NOT_A_RUN : err.message;
  return c.json({ error: status === 500 ? `internal error: ${message}` : message }, status);
}

/**
 * The request's JSON body (an empty body is `{}`), checked with `schema` (a
 * 400 says what is wrong) and returned as sent: the client library and the
 * workflow validate it again.
 */
export async function jsonBody<S extends z.ZodType>(c: Context, schema: S, prefix = ''): Promise<z.input<S>> {
  const text = await c.req.text();
  let body: unknown = {};
  try {
    if (text.trim()) body = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new HttpError(400, `${prefix}${describeIssues(parsed.error)}`);
  return body as z.input<S>;
}
