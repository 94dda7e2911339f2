import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Counter } from 'prom-client';

/**
 * The route label of a request, from a bounded set whatever a client sends:
 * the route's template (`/api/runs/:id/steer`), `unauthenticated` for every
 * request refused for its token, `unknown` for a path no route serves.
 */
export function routeLabel(template: string, status: number): string {
  if (status === 401) return 'unauthenticated';
  return template === '' || template === '*' || template.endsWith('/*') ? 'unknown' : template;
}

/** Counts every response by route label and status, once it is decided. */
export function countRequests(requests: Counter<'route' | 'status'>): MiddlewareHandler {
  return async (c, next) => {
    await next();
    // After next(), routeIndex points at the handler (or middleware) that answered.
    requests.inc({ route: routeLabel(routePath(c), c.res.status), status: String(c.res.status) });
  };
}
