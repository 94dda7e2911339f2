/**
 * The LLM retry policy, in one place (reference 004). The activity reads it
 * to decide each failure (which class, how soon, whether this attempt was
 * the last); the workflow reads it to build the activity's Temporal retry
 * policy, whose bounds must cover every class. Pure, so both load it.
 */

/** Why an LLM call failed, which decides whether and how soon to retry it. */
export type LlmErrorKind = 'rate_limit' | 'server' | 'network' | 'timeout' | 'malformed' | 'context_overflow' | 'auth' | 'quota' | 'bad_request';

/** Retry budget per error class: attempts in all, and the backoff range. */
export const RETRY_BUDGETS: Record<LlmErrorKind, { attempts: number; initialMs: number; maxMs: number }> = {
  rate_limit: { attempts: 5, initialMs: 1_000, maxMs: 60_000 },
  server: { attempts: 3, initialMs: 1_000, maxMs: 30_000 },
  network: { attempts: 3, initialMs: 1_000, maxMs: 30_000 },
  timeout: { attempts: 3, initialMs: 1_000, maxMs: 30_000 },
  malformed: { attempts: 3, initialMs: 500, maxMs: 5_000 },
  context_overflow: { attempts: 1, initialMs: 0, maxMs: 0 },
  auth: { attempts: 1, initialMs: 0, maxMs: 0 },
  quota: { attempts: 1, initialMs: 0, maxMs: 0 },
  bad_request: { attempts: 1, initialMs: 0, maxMs: 0 },
};

/** The Temporal failure type for each class (matched by workflow code and retry policies). */
export const FAILURE_TYPES: Record<LlmErrorKind, string> = {
  rate_limit: 'LlmRateLimited',
  server: 'LlmServerError',
  network: 'LlmNetworkError',
  timeout: 'LlmTimeout',
  malformed: 'LlmMalformedReply',
  context_overflow: 'LlmContextOverflow',
  auth: 'LlmAuthError',
  quota: 'LlmQuotaExhausted',
  bad_request: 'LlmBadRequest',
};

/** Failures that no retry, fallback or loop can fix: the run fails loudly instead of burning calls. */
export const FATAL_FAILURE_TYPES: readonly string[] = [FAILURE_TYPES.bad_request, FAILURE_TYPES.auth, FAILURE_TYPES.quota];

/** A summary for compaction is worth one retry: on a second failure the run keeps its full context. */
export const COMPACTION_ATTEMPTS = 2;

const budgets = Object.values(RETRY_BUDGETS);

/**
 * The Temporal retry policy of the LLM activities: the outer bounds of every
 * class's budget. The activity sets each delay itself (jitter, Retry-After)
 * and marks a class's last attempt non-retryable, so these bounds only stop
 * a class from outliving its budget; `initialInterval` applies only to a
 * failure that set no delay.
 */
export const LLM_ACTIVITY_RETRY = {
  initialInterval: 1_000,
  backoffCoefficient: 2,
  maximumInterval: Math.max(...budgets.map((b) => b.maxMs)),
  maximumAttempts: Math.max(...budgets.map((b) => b.attempts), COMPACTION_ATTEMPTS),
} as const;

/** Failures that say the provider is unwell, and so count towards its circuit breaker; a bad request or a missing key say nothing about it. */
export function countsAgainstProvider(kind: LlmErrorKind): boolean {
  return kind !== 'bad_request' && kind !== 'context_overflow' && kind !== 'auth' && kind !== 'quota';
}

/** Whether the attempt (1-based) that failed this way was the class's last. */
export function isFinalAttempt(kind: LlmErrorKind, attempt: number): boolean {
  return attempt >= RETRY_BUDGETS[kind].attempts;
}

/** Jittered exponential backoff for the given 1-based attempt, at least the server's Retry-After. */
export function retryDelayMs(kind: LlmErrorKind, attempt: number, retryAfter: number | undefined, random: () => number): number {
  const { initialMs, maxMs } = RETRY_BUDGETS[kind];
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.round(ceiling / 2 + random() * (ceiling / 2));
  return Math.max(jittered, retryAfter ?? 0);
}
