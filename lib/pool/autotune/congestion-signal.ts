import { isThrottling, isTimeout } from '../../errors/index.js';

/**
 * Whether an attempt's error should cut the request rate: throttling (SlowDown, 503/429, a service's
 * throttling code) or a timeout (a timed-out attempt is latency gone to infinity). Both come from the one
 * taxonomy in lib/errors/classify.ts.
 */
export function isCongestionSignal(error: unknown): boolean {
  return isThrottling(error) || isTimeout(error);
}
