import { type Backoff, ExponentialBackoff } from '../backoff/index.js';
import { sleep, throwIfAborted } from './backoff.js';
import type { BudgetContext, BudgetStore } from './budget-store.js';
import { SemaphoreTimeoutError } from './errors.js';
import { newLeaseId } from './lease-id.js';
import { ScheduledBooking } from './rate-booking.js';
import { checkBook } from './rate-budget-checks.js';
import { planBooking, type Schedule, type ScheduleChange } from './rate-schedule.js';
import type { BookOptions, RateBooking } from './rate-types.js';
import { BOOKING_RACE_BACKOFF } from './tuning.js';

/** The longest delay a Node timer keeps (a longer one fires at once). */
const maxTimerMs = 2 ** 31 - 1;

/**
 * `RateBudget.book` over a store (docs/fleet-cap.md#what-a-holder-does): read the schedule (creating it at
 * its starting rate when missing), plan the booking, and write it on the condition that the schedule is still the
 * one read. A lost race reads again after a full-jitter backoff; a schedule booked past `latestStart`
 * rejects at once (`SemaphoreTimeoutError.freeAt`: its first free slot), so a caller never waits here for
 * its turn: it waits for its first slot, or comes back then.
 */
export async function bookSlots(budget: BudgetContext, options: BookOptions): Promise<RateBooking> {
  checkBook(budget.name, options);
  const { latestStart } = options;
  // Without a signal the call ends at writeBy, when no slot is of use any more (a store that stalls, or
  // answers late, cannot hold the caller).
  const signal =
    options.signal ?? AbortSignal.timeout(Math.min(maxTimerMs, Math.max(0, options.writeBy - budget.now())));
  const id = newLeaseId();
  let wait: Backoff = new ExponentialBackoff({
    initialDelay: BOOKING_RACE_BACKOFF.firstDelayMs,
    maxDelay: BOOKING_RACE_BACKOFF.maxDelayMs,
    random: budget.random,
  }).next();
  try {
    for (;;) {
      throwIfAborted(signal);
      const schedule = await readOrCreate(budget, signal);
      const now = budget.now();
      const plan = planBooking(schedule, budget.ceiling, now, options);
      if (plan === undefined)
        throw new SemaphoreTimeoutError(
          budget.name,
          options.writes,
          latestStart,
          Math.max(now, schedule.freeAt),
        );
      if (await landed(budget.store, schedule, plan.change, id, signal))
        return new ScheduledBooking(budget, plan, { rate: schedule.rate, bookedAt: now });
      const after = budget.now();
      if (after >= latestStart) throw new SemaphoreTimeoutError(budget.name, options.writes, latestStart);
      await sleep(Math.min(wait.duration, latestStart - after), signal);
      wait = wait.next();
    }
  } catch (err) {
    // A request cut short by the signal fails with the SDK's AbortError: report the caller's reason.
    if (signal.aborted) throw signal.reason;
    throw err;
  }
}

async function readOrCreate(budget: BudgetContext, signal: AbortSignal | undefined): Promise<Schedule> {
  const schedule = await budget.store.read(signal);
  if (schedule !== undefined) return schedule;
  await budget.store.create(budget.startRate, signal);
  // Read what is stored: a racing creator may have written another rate.
  const created = await budget.store.read(signal);
  if (created === undefined)
    throw new Error(`rate budget "${budget.name}": its item vanished after creation`);
  return created;
}

/**
 * Writes `change` as `id`; when the condition fails, whether this very write landed all the same by an
 * earlier attempt whose answer was lost (the SDK retries a write whose answer it did not get, and the retry
 * then finds the version moved by itself).
 */
export async function landed(
  store: BudgetStore,
  read: Schedule,
  change: ScheduleChange,
  id: string,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  if (await store.write(read, change, id, signal)) return true;
  const after = await store.read(signal);
  return after?.by === id && after.version === read.version + 1;
}
