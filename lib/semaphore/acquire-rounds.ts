import { type Backoff, ExponentialBackoff } from '../backoff/index.js';
import { sleep, throwIfAborted } from './backoff.js';
import { SemaphoreTimeoutError } from './errors.js';

/** What one DynamoDB-backed acquire needs: how to try once, how to give a short grant back, when to stop. */
export interface AcquireRounds<G extends { n: number }> {
  readonly name: string;
  readonly min: number;
  /** The least a round's grants may add up to, read after each round (default `min`): an adaptive
   * semaphore whose whole limit is under `min` is had whole. */
  readonly enough?: () => number;
  /**
   * Epoch ms at which the holders in the way expect to be done, read after a short round (`undefined`:
   * unknown, poll). The next round waits until then instead of polling, then polls from the base delay; a
   * time past the deadline ends the acquire at once (`SemaphoreTimeoutError`): waiting cannot succeed. A
   * time already past (holders running late) polls, and is the timeout's `dueAt` if the deadline comes.
   */
  readonly nextRoundAt?: () => number | undefined;
  readonly deadline: number | undefined;
  readonly signal: AbortSignal | undefined;
  readonly backoffBaseMs: number;
  readonly backoffCapMs: number;
  readonly now: () => number;
  readonly random: () => number;
  /** One round: takes up to `k` permits (never more than are free) and resolves what it got. */
  round(attempt: number): Promise<G[]>;
  /** Gives grants back (bounded on its own: the signal may be why it is called). */
  giveBack(grants: readonly G[]): Promise<void>;
}

/**
 * The acquire loop both DynamoDB semaphores share: a round; `min` or more: done; else give the partial
 * grant back (holding it while waiting would let two waiters deadlock), back off with full jitter, and
 * try again until the deadline (`SemaphoreTimeoutError`) or the signal (its reason). Rejected means
 * nothing held that could be given back.
 */
export async function acquireInRounds<G extends { n: number }>(a: AcquireRounds<G>): Promise<G[]> {
  const backoff = new ExponentialBackoff({
    initialDelay: a.backoffBaseMs,
    maxDelay: a.backoffCapMs,
    random: a.random,
  });
  let wait: Backoff = backoff.next();
  try {
    for (let attempt = 0; ; attempt++) {
      throwIfAborted(a.signal);
      const grants = await a.round(attempt);
      if (grants.reduce((sum, g) => sum + g.n, 0) >= (a.enough?.() ?? a.min)) {
        // The signal may have aborted while the round's writes were in flight.
        if (a.signal?.aborted) {
          await a.giveBack(grants).catch(() => undefined);
          throw a.signal.reason;
        }
        return grants;
      }
      await a.giveBack(grants);
      const now = a.now();
      const at = a.nextRoundAt?.();
      if (a.deadline !== undefined && now >= a.deadline)
        throw new SemaphoreTimeoutError(a.name, a.min, a.deadline, undefined, at);
      let delay: number;
      if (at !== undefined && at > now) {
        if (a.deadline !== undefined && at > a.deadline)
          throw new SemaphoreTimeoutError(a.name, a.min, a.deadline, at);
        // Waiters that read the same due time wake spread over their backoff cap (one that polls more
        // often, closer to giving up, tends to wake first), then poll from the base delay.
        delay = at - now + a.random() * a.backoffCapMs;
        attempt = -1;
        wait = backoff.next();
      } else {
        delay = wait.duration;
        wait = wait.next();
      }
      await sleep(a.deadline === undefined ? delay : Math.min(delay, a.deadline - now), a.signal);
    }
  } catch (err) {
    // A request cut short by the signal fails with the SDK's AbortError: report the caller's reason.
    if (a.signal?.aborted) throw a.signal.reason;
    throw err;
  }
}
