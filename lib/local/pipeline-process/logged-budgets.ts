import type { RateBudgetFactory } from '../../ingest/handler/run/rate-holder.js';
import type { BookingReport, BookOptions, RateBooking, RateBudget } from '../../semaphore/rate-types.js';
import type { EventLog } from './event-log.js';
import type { HeldPermits } from './logged-semaphores.js';

/**
 * Wraps a rate-budget factory (`FLEET_CAP=rate`) so every booking and report is logged (`rate-book` after
 * the booking, `rate-report` before the call, once its writes have drained) and every booking counted in
 * `held` from one to the other (per budget name): the slots of every process, killed ones included, can
 * then be rebuilt from the logs and held against the writes S3 accepted.
 */
export function loggedBudgets(
  base: RateBudgetFactory,
  log: EventLog,
  container: number,
  held: HeldPermits,
): RateBudgetFactory {
  let bookings = 0;
  return (name, ceiling) => {
    const budget = base(name, ceiling);
    return {
      name: budget.name,
      ceiling: budget.ceiling,
      async book(options: BookOptions): Promise<RateBooking> {
        const booking = await budget.book(options);
        held.add(name, 1);
        const fence = `${container}-${++bookings}`;
        const { rate, startAt, endsAt, writes } = booking;
        log.write({ event: 'rate-book', container, name, ceiling, rate, startAt, endsAt, writes, fence });
        let reported = false;
        return {
          rate,
          startAt,
          endsAt,
          writes,
          bookedAt: booking.bookedAt,
          queued: booking.queued,
          step: (round, stepOptions) => booking.step(round, stepOptions),
          async report(report: BookingReport, reportOptions?: { readonly signal?: AbortSignal }) {
            if (!reported) {
              reported = true;
              held.add(name, -1);
              log.write({ event: 'rate-report', container, name, rate, fence });
            }
            await booking.report(report, reportOptions);
          },
        };
      },
    } satisfies RateBudget;
  };
}
