import type { RateBooking } from './rate-types.js';

/**
 * `booking`'s slots with other `step` and `report` calls: what a wrapper that watches a booking (logs it,
 * counts it, observes its failures) hands on in its place.
 */
export function withBookingCalls(
  booking: RateBooking,
  calls: Pick<RateBooking, 'step' | 'report'>,
): RateBooking {
  const { rate, startAt, endsAt, writes, bookedAt, queued } = booking;
  return { rate, startAt, endsAt, writes, bookedAt, queued, step: calls.step, report: calls.report };
}
