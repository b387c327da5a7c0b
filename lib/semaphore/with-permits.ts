import type { AcquireOptions, Lease, Semaphore } from './types.js';

/**
 * What a permit-sized executor must offer. `ExecutorPool` satisfies it structurally; nothing here depends
 * on the pool's internals.
 */
export interface ConcurrencyTarget {
  /** Caps the work in flight at `n`. */
  setConcurrency(n: number): void;
  /**
   * Resolves when nothing is queued or in flight, including timed-out attempts whose aborted work has not
   * returned (`ExecutorPool.drain`). When present it is awaited before the permits are released, so no
   * operation outlives its permit.
   */
  drain?(): Promise<void>;
}

/**
 * What `withPermits` asks of the semaphore, and where a failed release is reported.
 * @example { want: 16, deadline: Date.now() + 2_000, signal, onReleaseError: (e) => logger.warn('release failed', { e }) }
 */
export interface PermitRequest extends AcquireOptions {
  /** Permits wanted (the pool's useful concurrency). The grant is between `min` (default 1) and `want`. */
  want: number;
  /**
   * Called when the lease's release fails (DynamoDB unreachable, say). The release never changes the call's
   * result: the work already ran and the lease expires by itself, so the caller only logs or counts it.
   * @default undefined (the failure is dropped; the lease expires at `expiresAt`)
   */
  onReleaseError?: (error: unknown) => void;
}

/**
 * Runs `run` with `target` sized to the permits one lease grants: acquire once (per invocation, per
 * prefix), `setConcurrency(lease.permits)`, run, wait for the target to drain, release on every exit
 * path. While the lease is held the target never has more in flight than the permits held. A failed
 * release goes to `onReleaseError` and never changes what the call resolves or rejects with.
 * `min` defaults to 1 here (any permit lets work progress), unlike `acquire` where it defaults to `k`.
 */
export async function withPermits<T>(
  semaphore: Semaphore,
  target: ConcurrencyTarget,
  request: PermitRequest,
  run: (lease: Lease) => Promise<T>,
): Promise<T> {
  const { want, onReleaseError, ...options } = request;
  const lease = await semaphore.acquire(want, { ...options, min: options.min ?? 1 });
  try {
    target.setConcurrency(lease.permits);
    return await run(lease);
  } finally {
    try {
      await target.drain?.();
    } finally {
      // A failed release must not replace the run's result or error: the lease expires by itself.
      await lease.release().catch((error: unknown) => onReleaseError?.(error));
    }
  }
}
