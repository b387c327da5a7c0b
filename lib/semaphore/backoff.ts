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
