import { isThrottling, isTimeout } from '../../errors/index.js';

/**
 * The autotuner's default `isThrottle`: throttling (HTTP 503/429, a service's throttling code or name) or a
 * timeout (a timed-out attempt is latency gone to infinity). Both come from the one
 * taxonomy in lib/errors/classify.ts.
 */
export function isCongestionSignal(error: unknown): boolean {
  return isThrottling(error) || isTimeout(error);
}
