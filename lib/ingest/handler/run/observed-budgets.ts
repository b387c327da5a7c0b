import { withBookingCalls } from '../../../semaphore/booking-calls.js';
import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import type { BookOptions, RateBooking, RateBudget } from '../../../semaphore/rate-types.js';
import type { RateBudgetFactory } from './rate-holder.js';

/** What the invocation learns from its budgets' calls. */
export interface SemaphoreObserver {
  /** Time one booking took, whether it got slots or not. */
  permitWait(ms: number): void;
  /** A booking or report that failed for a reason other than running out of time or being aborted. */
  semaphoreFailure(error: unknown): void;
}

/**
 * Wraps every rate budget `PrefixRates` builds so the running invocation (`observer()`, read at each
 * call: budgets are cached per container, invocations are not) sees how long bookings took and which calls
 * failed. A schedule booked past the holder's latest start, or a booking aborted at the cutoff, is the
 * budget doing its job, not a failure.
 */
export function observeBudgets(
  factory: RateBudgetFactory,
  observer: () => SemaphoreObserver | undefined,
): RateBudgetFactory {
  return (name, ceiling, startRate) => {
    const inner = factory(name, ceiling, startRate);
    return {
      name: inner.name,
      ceiling: inner.ceiling,
      book: (options) => observedBook(inner, options, observer()),
    } satisfies RateBudget;
  };
}

async function observedBook(
  budget: RateBudget,
  options: BookOptions,
  observer: SemaphoreObserver | undefined,
): Promise<RateBooking> {
  const started = performance.now();
  try {
    const booking = await budget.book(options);
    return withBookingCalls(booking, {
      step: (round, stepOptions) => booking.step(round, stepOptions),
      report: async (report, reportOptions) => {
        try {
          await booking.report(report, reportOptions);
        } catch (error) {
          observer?.semaphoreFailure(error);
          throw error;
        }
      },
    });
  } catch (error) {
    if (!(error instanceof SemaphoreTimeoutError) && options.signal?.aborted !== true)
      observer?.semaphoreFailure(error);
    throw error;
  } finally {
    observer?.permitWait(performance.now() - started);
  }
}
