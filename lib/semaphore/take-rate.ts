import { type Backoff, ExponentialBackoff } from '../backoff/index.js';
import { sleep, throwIfAborted } from './backoff.js';
import { type BudgetHolder, expiredHolders, floorToRateGrid, freeAt, onRateGrid } from './budget-item.js';
import { type BudgetContext, BudgetLease } from './budget-lease.js';
import { SemaphoreTimeoutError } from './errors.js';
import { newLeaseId } from './lease-id.js';
import { checkTake } from './rate-budget-checks.js';
import type { RateLease, TakeOptions } from './rate-types.js';
import { ACQUIRE_BACKOFF_BASE_MS, ACQUIRE_BACKOFF_CAP_MS } from './tuning.js';

/** A budget's take loop and its randomness (the backoff's jitter). */
export interface TakeContext extends BudgetContext {
  readonly random: () => number;
}

/**
 * `RateBudget.take` over a store (docs/fleet-cap.md#what-a-holder-does): each round reads the item
 * (creating it at the ceiling when missing), reclaims expired holders, and takes `min(want, free)` when at
 * least `least` is free (the whole budget, when that is less). A round that finds too little free sleeps
 * until the holders in the way said they would be done (`BudgetHolder.due`), or rejects at once when that
 * is past the deadline (`SemaphoreTimeoutError.freeAt`: the caller can come back then); a round that loses
 * the race, or finds holders past their due, backs off with full jitter and reads again, until the deadline
 * (`SemaphoreTimeoutError`) or the signal (its reason). Rejected means holding nothing that could be given
 * back.
 */
export async function takeRate(budget: TakeContext, want: number, options: TakeOptions): Promise<RateLease> {
  const rates = checkTake(budget.name, budget.ceiling, want, options);
  const { deadline, signal } = options;
  const fence = newLeaseId();
  const until = budget.now() + options.leaseMs;
  let wait: Backoff = firstWait(budget);
  try {
    for (;;) {
      throwIfAborted(signal);
      const { lease, freeAt: due } = await takeRound(budget, fence, rates, until, options.writes, signal);
      if (lease !== undefined) {
        // The signal may have aborted while the take was in flight.
        if (signal?.aborted) {
          await giveBack(budget, fence, lease.rate);
          throw signal.reason;
        }
        return lease;
      }
      const now = budget.now();
      if (due > deadline) throw new SemaphoreTimeoutError(budget.name, options.least, deadline, due);
      if (now >= deadline) throw new SemaphoreTimeoutError(budget.name, options.least, deadline);
      if (due > now) {
        // The holders in the way said when they would be done: read again then, and poll from the base
        // delay if they run late.
        await sleep(Math.min(due, deadline) - now, signal);
        wait = firstWait(budget);
        continue;
      }
      await sleep(Math.min(wait.duration, deadline - now), signal);
      wait = wait.next();
    }
  } catch (err) {
    // A request cut short by the signal fails with the SDK's AbortError: report the caller's reason.
    if (signal?.aborted) throw signal.reason;
    throw err;
  }
}

/** The first wait of a polling run: full jitter over the base delay, doubling to the cap. */
function firstWait(budget: TakeContext): Backoff {
  return new ExponentialBackoff({
    initialDelay: ACQUIRE_BACKOFF_BASE_MS,
    maxDelay: ACQUIRE_BACKOFF_CAP_MS,
    random: budget.random,
  }).next();
}

/**
 * One round: a lease; or none, with when `least` should be free by the holders' due times (`now` when it
 * was free and another taker won the race, or the holders in the way are late).
 */
async function takeRound(
  budget: TakeContext,
  fence: string,
  rates: { readonly want: number; readonly least: number },
  until: number,
  writes: number | undefined,
  signal: AbortSignal | undefined,
): Promise<{ readonly lease?: BudgetLease; readonly freeAt: number }> {
  const { store, ceiling } = budget;
  let item = await store.read(signal);
  if (item === undefined) {
    await store.create(ceiling, signal);
    // Read what is stored: a racing creator may have written another ceiling.
    item = await store.read(signal);
    if (item === undefined) return { freeAt: budget.now() };
  }
  const now = budget.now();
  const expired = expiredHolders(item, now);
  const freed = expired.length > 0 ? await store.reclaim(expired, signal) : 0;
  // A budget above this taker's ceiling grants only what a budget at the ceiling would leave free.
  const excess = Math.max(0, item.budget - ceiling);
  const free = onRateGrid(item.free + freed - excess);
  // A budget cut below `least` is had whole once nothing holds it: increases come only from releases, so
  // a budget no taker could take would never rise again.
  const whole = floorToRateGrid(Math.min(item.budget, ceiling));
  const least = Math.max(1e-6, Math.min(rates.least, whole));
  if (free < least) {
    const left = [...item.holders].filter(([f]) => !expired.some(([e]) => e === f)).map(([, h]) => h);
    return { freeAt: freeAt(free, left, least, now) };
  }
  const r = Math.min(rates.want, free);
  // Due when its writes are done at its rate, when it said how many it makes.
  const holder: BudgetHolder =
    writes === undefined
      ? { r, until, at: now }
      : { r, until, at: now, due: Math.min(until, Math.ceil(now + (writes * 1000) / r)) };
  try {
    if (await store.take(fence, holder, onRateGrid(holder.r + excess), signal))
      return { lease: new BudgetLease(budget, fence, holder, item.budget, item.decreasedAt), freeAt: now };
    // "Condition failed" is a lost race, or this very write landed by an earlier attempt whose answer was
    // lost (the SDK retries it, and the retry finds the entry): then the lease is held, and is this one.
    const after = await store.read(signal);
    const own = after?.holders.get(fence);
    return own === undefined
      ? { freeAt: now }
      : { lease: new BudgetLease(budget, fence, own, after!.budget, after!.decreasedAt), freeAt: now };
  } catch (err) {
    // The take may have landed with its answer lost: give it back (a no-op if it never landed).
    await giveBack(budget, fence, holder.r);
    throw err;
  }
}

/**
 * Gives lease `fence`'s `rate` back, conditionally, bounded by `giveBackTimeoutMs` (not by the caller's
 * signal, which may be why it is given back). A give-back that fails leaves the entry to expire.
 */
async function giveBack(budget: BudgetContext, fence: string, rate: number): Promise<void> {
  await budget.store
    .release(fence, rate, AbortSignal.timeout(budget.giveBackTimeoutMs))
    .catch(() => undefined);
}
