import { exponentialDelay } from '../backoff/index.js';

/**
 * Full-jitter exponential backoff: a uniform delay in [0, min(cap, base * 2^attempt)] for the 0-based
 * `attempt`, lib/backoff's `exponentialDelay`. Jitter keeps waiting acquirers from retrying in lockstep
 * against the same items. Loops step an `ExponentialBackoff` instead (acquire-rounds.ts).
 */
export function backoffDelay(attempt: number, baseMs: number, capMs: number, random: () => number): number {
  return exponentialDelay(attempt + 1, baseMs, capMs, 'full', random);
}

/** Rejects with the signal's reason when it is (or becomes) aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/** Waits `ms`, or rejects with `signal.reason` as soon as the signal aborts. Uses the global timer so fake timers drive it. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The backoff cap of one acquire: the caller's `backoffCapMs` when it is a positive number below the
 * semaphore's own cap, else the semaphore's (a caller may poll more often, never less).
 */
export function acquireBackoffCap(semaphoreCapMs: number, requestedMs: number | undefined): number {
  return requestedMs !== undefined && requestedMs > 0 && requestedMs < semaphoreCapMs
    ? requestedMs
    : semaphoreCapMs;
}
