import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import type { AcquireOptions, Lease, Semaphore } from '../../../semaphore/types.js';

/**
 * How much longer a tenant waits for its turn, past its deadline, while the holders in the way are late:
 * they said they would be done by now (`SemaphoreTimeoutError.dueAt` past), so their release is a matter of
 * their last writes and one DynamoDB write, and a waiter present then is the one the hand-over needs.
 * Without it, waiters give up just before a late holder releases and the prefix sits idle until their
 * deferred copies come back (docs/decisions/prefix-hand-over.md).
 */
export const LATE_HOLDER_GRACE_MS = 1_000;

/**
 * A holder later than this past its announced due time is taken for stuck (its invocation crashed or
 * stalled: its entry stays until its lease expires, up to the function's timeout), not about to release:
 * its waiters neither stay for it nor come back every second, but back off as behind a holder that said
 * nothing, so records behind a crashed holder do not use up their deferrals and receives within a minute.
 * Well above how late live holders run (docs/decisions/prefix-hand-over.md).
 */
export const STUCK_HOLDER_LATE_MS = 5_000;

/**
 * Whether the holders in the way were due `dueAt` and are late by at most `STUCK_HOLDER_LATE_MS` at
 * `now`: running late, not stuck.
 */
export function lateNotStuck(dueAt: number | undefined, now: number): boolean {
  return dueAt !== undefined && dueAt <= now && now - dueAt <= STUCK_HOLDER_LATE_MS;
}

/** Whether `error` says the holders in the way were due already (late, not stuck) when the wait ran out. */
export function timedOutBehindLateHolders(error: unknown, now: number): boolean {
  return (
    error instanceof SemaphoreTimeoutError &&
    // Stryker disable next-line ConditionalExpression: equivalent, a timeout with freeAt has dueAt = freeAt, after its deadline (not past)
    error.freeAt === undefined &&
    lateNotStuck(error.dueAt, now)
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
