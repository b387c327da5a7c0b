// The one error taxonomy of the package. Every place that must tell "throttled", "timed out", "try again"
// from "permanent" (the pool's retry policy, the autotuner's congestion signal, the handler's outcomes and
// metrics, the store's conflict handling) asks these functions, so a new AWS error code is added once.

/** Node and undici codes of a connection that failed or broke mid-request: always transient. */
export const NETWORK_ERROR_CODES: readonly string[] = Object.freeze([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Names/codes meaning "the service is overloaded, slow down": S3's `SlowDown` (HTTP 503) and the throttling
 * codes of DynamoDB, SQS and the other AWS services. HTTP 429 and 503 count too, whatever the name.
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

/**
 * Names/codes of a request that ran out of time: the pool's `TaskTimeoutError`, the platform's `TimeoutError`
 * (`AbortSignal.timeout`, the SDK's socket/request timeouts), the services' own timeout codes, and undici's
 * codes for a response whose headers or body stalled past its timeout.
 */
export const TIMEOUT_ERROR_NAMES: readonly string[] = Object.freeze([
  'TaskTimeoutError',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * Server-side and concurrency codes that say "the request may succeed if sent again": S3's
 * `ConditionalRequestConflict` (HTTP 409: a concurrent conflicting write, AWS says retry; it is not
 * "exists"), internal errors, DynamoDB's `TransactionInProgressException`.
 */
export const TRANSIENT_SERVER_ERROR_NAMES: readonly string[] = Object.freeze([
  'ConditionalRequestConflict',
  'InternalError',
  'InternalServerError',
  'InternalFailure',
  'TransactionInProgressException',
  'NetworkError',
  'NetworkingError',
]);

/** HTTP statuses that are transient whatever the error's name. */
const TRANSIENT_STATUS = new Set([429, 500, 502, 503, 504]);

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: unknown };
}

const THROTTLING = new Set(THROTTLING_ERROR_NAMES);
const TIMEOUTS = new Set(TIMEOUT_ERROR_NAMES);
const TRANSIENT = new Set([...TRANSIENT_SERVER_ERROR_NAMES, ...NETWORK_ERROR_CODES]);

function shape(error: unknown): ErrorShape | undefined {
  return typeof error === 'object' && error !== null ? (error as ErrorShape) : undefined;
}

function hasName(e: ErrorShape, names: ReadonlySet<string>): boolean {
  return (
    (typeof e.name === 'string' && names.has(e.name)) || (typeof e.code === 'string' && names.has(e.code))
  );
}

/** The HTTP status the AWS SDK recorded for a failed call, if any. */
export function httpStatusOf(error: unknown): number | undefined {
  const status = shape(error)?.$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

/** Overload: S3 `SlowDown`, a service throttling code, HTTP 429 or 503, or the SDK's own throttling flag. */
export function isThrottling(error: unknown): boolean {
  const e = shape(error);
  if (e === undefined) return false;
  if (hasName(e, THROTTLING)) return true;
  const status = httpStatusOf(error);
  if (status === 503 || status === 429) return true;
  const retryable = e.$retryable;
  return (
    typeof retryable === 'object' &&
    retryable !== null &&
    (retryable as { throttling?: unknown }).throttling === true
  );
}

/** A request or task that ran out of time (ours, the platform's or the service's). */
export function isTimeout(error: unknown): boolean {
  const e = shape(error);
  return e !== undefined && hasName(e, TIMEOUTS);
}

/**
 * Worth trying again (a retry now, or a redelivery later): throttling, timeouts, 5xx and 429, S3's 409
 * `ConditionalRequestConflict`, network failures, and anything the SDK marked `$retryable`. Everything
 * else (other 4xx, validation, programming errors, non-objects) is permanent.
 */
export function isTransient(error: unknown): boolean {
  const e = shape(error);
  if (e === undefined) return false;
  if (isThrottling(error) || isTimeout(error) || hasName(e, TRANSIENT)) return true;
  if (e.$retryable) return true;
  const status = httpStatusOf(error);
  if (status !== undefined && (TRANSIENT_STATUS.has(status) || status === 409)) return true;
  return typeof e.message === 'string' && e.message.includes('socket hang up');
}
