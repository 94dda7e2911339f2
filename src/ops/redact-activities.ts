import { Context } from '@temporalio/activity';
import type { Redactor } from '../api/secrets.js';

type ActivityFunction = (...args: never[]) => Promise<unknown>;

/**
 * Wraps every activity so that nothing it hands to Temporal carries a secret:
 * its result, its failure (message, stack, details, causes) and its heartbeat
 * details are redacted. The wrapper sits inside the activity itself, below
 * every interceptor, so tracing and the SDK's logs only ever see redacted errors.
 */
export function redactActivities<A extends Record<string, ActivityFunction>>(activities: A, redactor: Redactor): A {
  const wrapped = Object.entries(activities).map(([name, activity]) => [name, redacting(activity, redactor)]);
  return Object.fromEntries(wrapped) as A;
}

function redacting<F extends ActivityFunction>(activity: F, redactor: Redactor): F {
  return (async (...args: Parameters<F>) => {
    const ctx = Context.current();
    const heartbeat = ctx.heartbeat;
    // Heartbeat details are stored by the server and shown again on retry and timeout.
    (ctx as { heartbeat: (details?: unknown) => void }).heartbeat = (details?: unknown) => heartbeat(redactor.value(details));
    try {
      return redactor.value(await activity(...args));
    } catch (err) {
      throw redactor.error(err);
    }
  }) as F;
}
