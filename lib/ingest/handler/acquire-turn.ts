import { SemaphoreTimeoutError } from '../../semaphore/errors.js';
import type { AcquireOptions, Lease, Semaphore } from '../../semaphore/types.js';

/**
 * How much longer a tenant waits for its turn, past its deadline, while the holders in the way are late:
 * they said they would be done by now (`SemaphoreTimeoutError.dueAt` past), so their release is a matter of
 * their last writes and one DynamoDB write, and a waiter present then is the one the hand-over needs.
 * Measured why (bench:load limit-bound): the hot prefix's first lease, slowed by four cold containers, ran
 * ~1 s past its announced end; its waiters gave up at their 1 s turn wait just before it released, their
 * deferred copies came back a second later, and the prefix sat idle for 0.5-1.3 s (a second with no write
 * at all in two runs of six).
 */
export const LATE_HOLDER_GRACE_MS = 1_000;

/** Whether `error` says the holders in the way were due already (late) when the wait ran out. */
export function timedOutBehindLateHolders(error: unknown, now: number): boolean {
  return (
    error instanceof SemaphoreTimeoutError &&
    error.freeAt === undefined &&
    error.dueAt !== undefined &&
    error.dueAt <= now
  );
}

/**
 * `semaphore.acquire`, waiting once more, for up to `graceMs` (never past `latest`), when the deadline came
 * while the holders in the way were late (`timedOutBehindLateHolders`). A holder that announced nothing,
 * or one due after the deadline, ends the wait as before: only a waiter that was going to be served within
 * its wait, had the holders kept their word, stays for the hand-over.
 */
export async function acquireForTurn(
  semaphore: Semaphore,
  k: number,
  options: AcquireOptions & { deadline: number },
  graceMs: number,
  latest: number,
): Promise<Lease> {
  try {
    return await semaphore.acquire(k, options);
  } catch (error) {
    const now = Date.now();
    const deadline = Math.min(now + graceMs, latest);
    if (!timedOutBehindLateHolders(error, now) || !(deadline > now) || options.signal?.aborted) throw error;
    return semaphore.acquire(k, { ...options, deadline });
  }
}
