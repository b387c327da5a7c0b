import {
  type BackoffStrategy,
  DecorrelatedBackoff,
  decorrelatedDelay,
  ExponentialBackoff,
  exponentialDelay,
  type RandomSource,
} from '../backoff/index.js';
import {
  isTransient,
  NETWORK_ERROR_CODES,
  THROTTLING_ERROR_NAMES,
  TIMEOUT_ERROR_NAMES,
  TRANSIENT_SERVER_ERROR_NAMES,
} from '../errors/index.js';
import { isPoolCutOff } from './errors.js';
import { nonNegative } from './validation.js';

/** How retry delays are randomised. */
export type JitterMode = 'full' | 'decorrelated' | 'none';

/** The retry policy's options: part of `ExecutorPoolOptions` (flat, like p-retry's). */
export interface RetryOptions {
  /**
   * Retries after the first attempt, for retryable errors only (see `isRetryableError`). `enqueue`'s
   * `retries` overrides it per task.
   * @default 3
   * @example new ExecutorPool({ retries: 5 })
   */
  retries?: number;
  /**
   * Base backoff in ms: retry n waits up to `retryDelay * 2^(n-1)` (see `jitter`).
   * @default 1000
   * @example new ExecutorPool({ retryDelay: 50 })
   */
  retryDelay?: number;
  /**
   * Cap on a single backoff, ms.
   * @default 20000
   * @example new ExecutorPool({ maxRetryDelay: 5_000 })
   */
  maxRetryDelay?: number;
  /**
   * Backoff randomisation: `'full'` is uniform in [0, min(cap, base·2^(n-1))] (AWS "full jitter");
   * `'decorrelated'` is min(cap, uniform in [base, 3·previous]); `'none'` is the capped exponential itself.
   * @default 'full'
   * @example new ExecutorPool({ jitter: 'decorrelated' })
   */
  jitter?: JitterMode;
  /**
   * Error `name`s or `code`s that are retryable. Passing a list replaces the default names; the structural
   * rules always apply (HTTP 429/5xx, the SDK's `$retryable`, network failures, the pool's own cut-offs).
   * @default DEFAULT_RETRYABLE_ERRORS (the throttling, timeout and transient names of lib/errors/classify.ts)
   * @example new ExecutorPool({ retryableErrors: [...DEFAULT_RETRYABLE_ERRORS, 'MyTransientError'] })
   */
  retryableErrors?: readonly string[];
}

/** What the pool runs its retries by: every default filled in. */
export interface RetryPolicy {
  readonly retries: number;
  readonly retryDelay: number;
  readonly maxRetryDelay: number;
  readonly jitter: JitterMode;
  readonly retryableErrors: readonly string[];
}

/**
 * The names `isRetryableError` uses when no list is given: the one taxonomy's (lib/errors/classify.ts)
 * throttling, timeout and transient server names plus the network codes. Exported to extend, not to edit.
 */
export const DEFAULT_RETRYABLE_ERRORS: readonly string[] = Object.freeze([
  ...THROTTLING_ERROR_NAMES,
  ...TIMEOUT_ERROR_NAMES,
  ...TRANSIENT_SERVER_ERROR_NAMES,
  ...NETWORK_ERROR_CODES,
]);

export const RETRY_DEFAULTS = {
  retries: 3,
  retryDelay: 1000,
  maxRetryDelay: 20_000,
  jitter: 'full',
} as const satisfies RetryOptions;

/** Fills defaults and rejects nonsense with a RangeError naming the field. */
export function resolveRetryOptions(options: RetryOptions): RetryPolicy {
  const jitter = options.jitter ?? RETRY_DEFAULTS.jitter;
  if (jitter !== 'full' && jitter !== 'decorrelated' && jitter !== 'none') {
    throw new RangeError(`jitter must be 'full', 'decorrelated' or 'none', got ${String(jitter)}`);
  }
  return {
    retries: nonNegative('retries', options.retries ?? RETRY_DEFAULTS.retries),
    retryDelay: nonNegative('retryDelay', options.retryDelay ?? RETRY_DEFAULTS.retryDelay),
    maxRetryDelay: nonNegative('maxRetryDelay', options.maxRetryDelay ?? RETRY_DEFAULTS.maxRetryDelay),
    jitter,
    retryableErrors: options.retryableErrors ?? DEFAULT_RETRYABLE_ERRORS,
  };
}

const NETWORK_CODES = new Set(NETWORK_ERROR_CODES);

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $retryable?: unknown;
  $metadata?: unknown;
}

/** Whether `e`'s `name` or `code` is in `names` or is a network failure code. */
function listed(e: ErrorShape, names: readonly string[]): boolean {
  for (const value of [e.name, e.code]) {
    if (typeof value === 'string' && (names.includes(value) || NETWORK_CODES.has(value))) return true;
  }
  return false;
}

/**
 * Transient (worth retrying or redelivering) vs permanent. With the default list this is the taxonomy's
 * `isTransient` (throttling, timeouts, 429/5xx, the transient conflict names, network failures, the
 * SDK's `$retryable`) plus the pool's own cut-offs (`TaskTimeoutError`, `TaskAbortedError`,
 * `PoolStoppedError`, `QueueFullError`, `CircuitOpenError`). With a custom `retryableErrors` list, the list
 * replaces the names; the structural rules (status, `$retryable`, network codes, 'socket hang up', the
 * pool's cut-offs) still apply. Everything else (other 4xx, validation, programming errors, non-objects) is
 * permanent.
 */
export function isRetryableError(
  err: unknown,
  retryableErrors: readonly string[] = DEFAULT_RETRYABLE_ERRORS,
): boolean {
  if (err === null || typeof err !== 'object') return false;
  if (isPoolCutOff(err)) return true;
  if (retryableErrors === DEFAULT_RETRYABLE_ERRORS) return isTransient(err);
  const e = err as ErrorShape;
  if (listed(e, retryableErrors)) return true;
  // The taxonomy's structural rules alone: the same error without its name or code.
  return isTransient({ message: e.message, $retryable: e.$retryable, $metadata: e.$metadata });
}

export interface BackoffPolicy {
  readonly retryDelay: number;
  readonly maxRetryDelay: number;
  readonly jitter: JitterMode;
}

/**
 * Delay before retry number `retry` (1-based; below 1 counts as 1). `full`: uniform in
 * [0, min(cap, base·2^(retry-1))] (AWS "full jitter"); `decorrelated`: min(cap, uniform in
 * [base, 3·previous]); `none`: the capped exponential itself. The formulas are lib/backoff's.
 */
export function computeBackoff(
  policy: BackoffPolicy,
  retry: number,
  previousDelay = 0,
  random: RandomSource = Math.random,
): number {
  const { retryDelay: base, maxRetryDelay: cap, jitter } = policy;
  if (jitter === 'decorrelated') return decorrelatedDelay(previousDelay, base, cap, random);
  return exponentialDelay(retry, base, cap, jitter, random);
}

/** The pool's retry waits as a lib/backoff strategy: each task steps its own `Backoff` from it. */
export function retryBackoff(policy: BackoffPolicy, random?: RandomSource): BackoffStrategy {
  const bounds = { initialDelay: policy.retryDelay, maxDelay: policy.maxRetryDelay };
  const source = random === undefined ? {} : { random };
  if (policy.jitter === 'decorrelated') return new DecorrelatedBackoff({ ...bounds, ...source });
  return new ExponentialBackoff({ ...bounds, jitter: policy.jitter, ...source });
}
