import type { JitterMode } from './options.js';

/** Node and undici codes of a connection that failed or broke mid-request: always transient. */
const NETWORK_ERROR_CODES = [
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
] as const;

/**
 * Names/codes meaning "the service is overloaded": S3's `SlowDown` (HTTP 503) and the throttling codes of
 * DynamoDB, SQS and the other AWS services. Shared with the autotuner, which cuts its rate on them.
 */
export const THROTTLING_ERROR_NAMES: readonly string[] = Object.freeze([
  'SlowDown',
  'ServiceUnavailable',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'ProvisionedThroughputExceededException',
]);

/** Names of a request that timed out: ours (`TimeoutError`) or the service's. */
export const TIMEOUT_ERROR_NAMES: readonly string[] = Object.freeze([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

/**
 * Names/codes retried by default: throttling, timeouts, the transient server codes of S3, DynamoDB and SQS,
 * plus Node/undici network codes.
 */
export const DEFAULT_RETRYABLE_ERRORS: readonly string[] = Object.freeze([
  ...THROTTLING_ERROR_NAMES,
  ...TIMEOUT_ERROR_NAMES,
  'InternalError',
  'InternalServerError',
  'InternalFailure',
  'TransactionInProgressException',
  'NetworkError',
  'NetworkingError',
  ...NETWORK_ERROR_CODES,
]);

/** Always transient whatever list is passed: network failures and our own timeout/abort/back-pressure errors. */
const ALWAYS_RETRYABLE = new Set([
  'TimeoutError',
  'AbortError',
  'PoolStoppedError',
  'QueueFullError',
  'CircuitOpenError',
  ...NETWORK_ERROR_CODES,
]);

const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: unknown };
}

/**
 * Transient (worth retrying or redelivering) vs permanent. Transient: a `name` or `code` in
 * `retryableErrors` (default {@link DEFAULT_RETRYABLE_ERRORS}); AWS SDK `$retryable` or
 * `$metadata.httpStatusCode` 429/500/502/503/504; network resets (ECONNRESET, ETIMEDOUT, EPIPE, 'socket hang
 * up', ...); our `TimeoutError`, `AbortError`, `PoolStoppedError`, `QueueFullError`, `CircuitOpenError`.
 * Everything else — other 4xx, validation errors, programming errors, non-objects — is permanent.
 */
export function isRetryableError(
  err: unknown,
  retryableErrors: readonly string[] = DEFAULT_RETRYABLE_ERRORS,
): boolean {
  if (err === null || typeof err !== 'object') return false;
  const e = err as ErrorShape;
  const name = typeof e.name === 'string' ? e.name : undefined;
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (name !== undefined && (ALWAYS_RETRYABLE.has(name) || retryableErrors.includes(name))) return true;
  if (code !== undefined && (ALWAYS_RETRYABLE.has(code) || retryableErrors.includes(code))) return true;
  if (e.$retryable) return true;
  const status = e.$metadata?.httpStatusCode;
  if (typeof status === 'number' && RETRYABLE_STATUS.has(status)) return true;
  return typeof e.message === 'string' && e.message.includes('socket hang up');
}

export interface BackoffPolicy {
  readonly retryDelay: number;
  readonly maxRetryDelay: number;
  readonly jitter: JitterMode;
}

/**
 * Delay before retry number `retry` (1-based). `full`: uniform in [0, min(cap, base·2^(retry-1))] (AWS "full
 * jitter"); `decorrelated`: min(cap, uniform in [base, 3·previous]); `none`: the capped exponential itself.
 */
export function computeBackoff(
  policy: BackoffPolicy,
  retry: number,
  previousDelay = 0,
  random: () => number = Math.random,
): number {
  const { retryDelay: base, maxRetryDelay: cap } = policy;
  if (policy.jitter === 'decorrelated') {
    const upper = Math.max(base, previousDelay * 3);
    return Math.min(cap, base + random() * (upper - base));
  }
  const exponential = Math.min(cap, base * 2 ** Math.min(retry - 1, 52));
  return policy.jitter === 'none' ? exponential : random() * exponential;
}
