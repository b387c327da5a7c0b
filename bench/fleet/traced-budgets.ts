import type { RateBudgetFactory } from '../../lib/ingest/handler/run/rate-holder.js';
import { withBookingCalls } from '../../lib/semaphore/booking-calls.js';
import { SemaphoreTimeoutError } from '../../lib/semaphore/errors.js';
import type {
  BookingReport,
  BookOptions,
  RateBooking,
  RateBudget,
  ScheduleView,
  WriteRound,
} from '../../lib/semaphore/rate-types.js';

/** Bookings, steps and reports of rate budgets, summed: what the rate engine did in a cell. */
export interface BudgetCounts {
  /** `book` calls, and those that booked slots. */
  bookings: number;
  booked: number;
  /** Slots asked for (sum of `writes`) and slots booked, over the calls that booked. */
  wantedSlots: number;
  bookedSlots: number;
  /** Bookings whose first slot was later than the call (others had booked ahead), and the wait summed (ms). */
  queued: number;
  queuedMsSum: number;
  /** Calls rejected with `SemaphoreTimeoutError`: the schedule booked past the latest start (records deferred). */
  outOfTurn: number;
  /** Calls that failed otherwise (aborted at the cutoff, the store unreachable). */
  failed: number;
  /** Steps within a booking (a round of refusals, or the read at a queued booking's first slot). */
  steps: number;
  /** Steps whose answer was a rate below the booking's: the holder followed a decrease. */
  stepsDecreased: number;
  /** Reports, and the sums of what they said. */
  reports: number;
  accepted: number;
  throttled: number;
  starved: number;
  /** Reports that failed (the budget's step lost). */
  reportsFailed: number;
}

/** The counts of every prefix and of the hot one. */
export interface BudgetTrace {
  all: BudgetCounts;
  hot: BudgetCounts;
}

const zero = (): BudgetCounts => ({
  bookings: 0,
  booked: 0,
  wantedSlots: 0,
  bookedSlots: 0,
  queued: 0,
  queuedMsSum: 0,
  outOfTurn: 0,
  failed: 0,
  steps: 0,
  stepsDecreased: 0,
  reports: 0,
  accepted: 0,
  throttled: 0,
  starved: 0,
  reportsFailed: 0,
});

const round = (n: number) => Math.round(n * 1000) / 1000;

/**
 * Wraps a rate-budget factory so every booking, step and report is counted (`trace`), and those of the hot
 * budgets (`isHot`: the hot tenant's prefix, or its stripes when sharded) are also written one per line
 * through `line` (the cell's trace file).
 */
export function traceBudgets(
  inner: RateBudgetFactory,
  isHot: (name: string) => boolean,
  line: (entry: object) => void,
): { factory: RateBudgetFactory; trace: BudgetTrace } {
  const trace: BudgetTrace = { all: zero(), hot: zero() };
  const factory: RateBudgetFactory = (name, ceiling, startRate) => {
    const budget = inner(name, ceiling, startRate);
    const hot = isHot(name);
    const counts = hot ? [trace.all, trace.hot] : [trace.all];
    const add = (f: (c: BudgetCounts) => void) => {
      for (const c of counts) f(c);
    };
    const book = async (options: BookOptions): Promise<RateBooking> => {
      const called = Date.now();
      add((c) => c.bookings++);
      const asked = {
        name,
        writes: options.writes,
        latestStartIn: options.latestStart - called,
        writeByIn: options.writeBy - called,
      };
      let booking: RateBooking;
      try {
        booking = await budget.book(options);
      } catch (error) {
        if (error instanceof SemaphoreTimeoutError) {
          add((c) => c.outOfTurn++);
          if (hot) line({ book: { ...asked, outOfTurn: true, freeAtIn: (error.freeAt ?? called) - called } });
        } else {
          add((c) => c.failed++);
          if (hot) line({ book: { ...asked, failed: (error as Error).name } });
        }
        throw error;
      }
      const waitMs = Math.max(0, booking.startAt - booking.bookedAt);
      add((c) => {
        c.booked++;
        c.wantedSlots += options.writes;
        c.bookedSlots += booking.writes;
        if (booking.queued) {
          c.queued++;
          c.queuedMsSum += waitMs;
        }
      });
      if (hot)
        line({
          book: {
            ...asked,
            rate: round(booking.rate),
            slots: booking.writes,
            waitMs,
            queued: booking.queued,
          },
        });
      return traced(booking, add, hot ? line : undefined);
    };
    return { name: budget.name, ceiling: budget.ceiling, book } satisfies RateBudget;
  };
  return { factory, trace };
}

/** `booking` with its steps and its report counted. */
function traced(
  booking: RateBooking,
  add: (f: (c: BudgetCounts) => void) => void,
  line: ((entry: object) => void) | undefined,
): RateBooking {
  const { rate } = booking;
  return withBookingCalls(booking, {
    step: async (seen: WriteRound, options?: { readonly signal?: AbortSignal }): Promise<ScheduleView> => {
      add((c) => c.steps++);
      const view = await booking.step(seen, options);
      if (view.rate < rate) add((c) => c.stepsDecreased++);
      line?.({ step: { ...seen, rate: round(view.rate), decreasedAt: view.decreasedAt } });
      return view;
    },
    report: async (report: BookingReport, options?: { readonly signal?: AbortSignal }): Promise<void> => {
      add((c) => {
        c.reports++;
        c.accepted += report.accepted;
        c.throttled += report.throttled;
        if (report.starved) c.starved++;
      });
      line?.({ report: { rate, ...report } });
      try {
        await booking.report(report, options);
      } catch (error) {
        add((c) => c.reportsFailed++);
        throw error;
      }
    },
  });
}
