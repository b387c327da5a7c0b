import { THROTTLING_ERROR_NAMES, TIMEOUT_ERROR_NAMES } from '../retry-policy.js';

/** Overload and timeouts: a timed-out attempt is latency gone to infinity. */
const THROTTLE_NAMES = new Set([...THROTTLING_ERROR_NAMES, ...TIMEOUT_ERROR_NAMES]);

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: { throttling?: unknown };
}

/** Whether an attempt's error should cut the request rate: throttling (503/429, SlowDown, ...) or a timeout. */
export function isCongestionSignal(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as ErrorShape;
  if (typeof e.name === 'string' && THROTTLE_NAMES.has(e.name)) return true;
  if (typeof e.code === 'string' && THROTTLE_NAMES.has(e.code)) return true;
  const status = e.$metadata?.httpStatusCode;
  if (status === 503 || status === 429) return true;
  return e.$retryable?.throttling === true;
}
