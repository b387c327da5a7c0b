import type { S3Client } from '@aws-sdk/client-s3';
import type { RateBudgetFactory } from '../../ingest/handler/run/rate-holder.js';
import { withBookingCalls } from '../../semaphore/booking-calls.js';
import { nextRate } from '../../semaphore/rate-law.js';
import type {
  BookingReport,
  BookOptions,
  RateBooking,
  RateBudget,
  ScheduleView,
  StepOptions,
  WriteRound,
} from '../../semaphore/rate-types.js';
import { SLOT_CATCH_UP_MS } from '../../semaphore/tuning.js';
import type { EventLog } from './event-log.js';
import { budgetNameOf } from './in-flight-gauge.js';

/** A booking of one container that has not reported yet: its first slot, and the writes started under it. */
interface OpenBooking {
  readonly fence: string;
  readonly rate: number;
  /** Its first slot and where its slots end, stretched by the lower paces its holder took. */
  startAt: number;
  endsAt: number;
  attempts: number;
}

/**
 * The rate bookings one container has open, per budget name (a container runs one invocation at a time,
 * and an invocation one holder per tenant, so at most one per name), and the names it built a budget for:
 * its large tenants' prefixes.
 */
export class ContainerBookings {
  readonly #open = new Map<string, OpenBooking>();
  readonly #built = new Set<string>();
  readonly #holding = new Set<string>();
  #count = 0;

  constructor(
    readonly log: EventLog,
    readonly container: number,
  ) {}

  /** The booking open on `name`, if any. */
  on(name: string): OpenBooking | undefined {
    return this.#open.get(name);
  }

  /**
   * Whether a holder wrote on `name` under a booking in this invocation: from its first booking until the
   * invocation ends, across the gaps between a booking reported and the next one (its reads and the writes
   * still settling stay in flight then, within its pool's concurrency).
   */
  holding(name: string): boolean {
    return this.#holding.has(name);
  }

  /** Whether the container built budget `name`: its tenant writes under a booking from then on. */
  built(name: string): boolean {
    return this.#built.has(name);
  }

  markBuilt(name: string): void {
    this.#built.add(name);
  }

  /**
   * Opens a booking on `name`; its fence. One still open there is closed first: its holder booked again
   * (its slots were over with writes left), and reports only its last booking.
   */
  open(name: string, booking: Pick<RateBooking, 'rate' | 'startAt' | 'endsAt'>): string {
    this.#close(name, true);
    this.#holding.add(name);
    const fence = `${this.container}-${++this.#count}`;
    const { rate, startAt, endsAt } = booking;
    this.#open.set(name, { fence, rate, startAt, endsAt, attempts: 0 });
    return fence;
  }

  /**
   * Booking `fence`'s holder paces `stretch` times slower from `at` on: the slots it has left stretch (as the
   * schedule's do around a decrease, docs/fleet-cap.md#the-control-law).
   */
  stretch(name: string, fence: string, at: number, stretch: number): void {
    const open = this.#open.get(name);
    if (open?.fence !== fence) return;
    const later = (t: number) => (t > at ? at + (t - at) * stretch : t);
    open.startAt = later(open.startAt);
    open.endsAt = later(open.endsAt);
  }

  /** Its holder reports booking `fence` on `name`: logged (`rate-report`) with the writes started under it. */
  report(name: string, fence: string): void {
    if (this.#open.get(name)?.fence === fence) this.#close(name, false);
  }

  /**
   * The container's invocation ended: a booking still open was never reported (its first slot did not come
   * before the cutoff, or its writes failed): logged as reported then, `unreported`.
   */
  endInvocation(): void {
    for (const name of [...this.#open.keys()]) this.#close(name, true);
    this.#holding.clear();
  }

  #close(name: string, unreported: boolean): void {
    const open = this.#open.get(name);
    if (open === undefined) return;
    this.#open.delete(name);
    const { fence, rate, attempts } = open;
    this.log.write({
      event: 'rate-report',
      container: this.container,
      name,
      rate,
      fence,
      attempts,
      ...(unreported ? { unreported } : {}),
    });
  }
}

/**
 * Wraps a rate-budget factory so every booking is logged to `bookings.log` (`rate-book`
 * after the booking, `rate-step` when its holder follows a decrease, `rate-raise` when it takes a raised rate
 * at its first slot, `rate-report` before the report, once
 * its writes have drained, with the writes started under it) and kept open in `bookings` from one to the
 * other (`ContainerBookings.endInvocation` closes what its holder left unreported):
 * the slots of every process, killed ones included, can then be rebuilt from the logs and held against the
 * writes S3 accepted.
 */
export function loggedBudgets(base: RateBudgetFactory, bookings: ContainerBookings): RateBudgetFactory {
  const { log, container } = bookings;
  return (name, ceiling, startRate) => {
    const budget = base(name, ceiling, startRate);
    bookings.markBuilt(name);
    return {
      name: budget.name,
      ceiling: budget.ceiling,
      async book(options: BookOptions): Promise<RateBooking> {
        const booking = await budget.book(options);
        const { rate, startAt, endsAt, writes } = booking;
        const fence = bookings.open(name, booking);
        log.write({ event: 'rate-book', container, name, ceiling, rate, startAt, endsAt, writes, fence });
        let paced = rate;
        let reported = false;
        // The pace its holder takes from a step (rate-holder.ts): at its first slot (an empty round) the
        // schedule's rate when lower, its slots stretched around the decrease; after an overloaded round the
        // schedule's rate when lower, else the law applied to the round, its slots left stretched from now.
        // At its first slot a queued booking also takes a raised rate (`followIncrease`): its window holds
        // more slots.
        const follow = (round: WriteRound, view: ScheduleView | undefined, followIncrease: boolean) => {
          const first = round.accepted === 0 && round.throttled === 0;
          const scheduled = view === undefined ? Number.NaN : Math.min(view.rate, ceiling);
          if (first && followIncrease && scheduled > paced) {
            paced = scheduled;
            log.write({ event: 'rate-raise', container, name, fence, rate: scheduled, at: Date.now() });
            return;
          }
          const next = scheduled < paced || first ? scheduled : nextRate(paced, round, ceiling);
          if (!(next < paced)) return;
          const decreasedAt = first && view !== undefined ? view.decreasedAt : Date.now();
          bookings.stretch(name, fence, decreasedAt, paced / next);
          paced = next;
          log.write({ event: 'rate-step', container, name, fence, rate: next, decreasedAt });
        };
        return withBookingCalls(booking, {
          async step(round: WriteRound, stepOptions?: StepOptions): Promise<ScheduleView> {
            const followIncrease = stepOptions?.followIncrease === true;
            let view: ScheduleView;
            try {
              view = await booking.step(round, stepOptions);
            } catch (error) {
              follow(round, undefined, followIncrease);
              throw error;
            }
            follow(round, view, followIncrease);
            return view;
          },
          async report(report: BookingReport, reportOptions?: { readonly signal?: AbortSignal }) {
            if (!reported) {
              reported = true;
              bookings.report(name, fence);
            }
            await booking.report(report, reportOptions);
          },
        });
      },
    } satisfies RateBudget;
  };
}

const S3_WRITES = new Set([
  'PutObjectCommand',
  'DeleteObjectCommand',
  'DeleteObjectsCommand',
  'CopyObjectCommand',
]);

/**
 * Counts every S3 write a container starts on a prefix under its open booking there, and logs each one it
 * starts outside a booking (`unbooked-write`): with none open, or before its first slot or after its last
 * (stretched by the lower paces its holder took), by more than the catch-up a paced start may keep.
 */
export function watchBookedWrites(s3: S3Client, bookings: ContainerBookings): void {
  const { log, container } = bookings;
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      if (S3_WRITES.has(context.commandName ?? '')) {
        const name = budgetNameOf(args.input as { Bucket?: string; Key?: string });
        const open = bookings.on(name);
        if (open !== undefined) open.attempts++;
        const now = Date.now();
        const large = bookings.built(name);
        if (open === undefined) log.write({ event: 'unbooked-write', container, name, large });
        else {
          const outsideMs = Math.max(
            open.startAt - SLOT_CATCH_UP_MS - now,
            now - open.endsAt - SLOT_CATCH_UP_MS,
          );
          if (outsideMs > 0) log.write({ event: 'unbooked-write', container, name, large, outsideMs });
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'chaosBookedWrites' },
  );
}
