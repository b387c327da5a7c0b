import { nextRate } from './rate-law.js';
import type { WriteRound } from './rate-types.js';

/**
 * A prefix's schedule as stored (docs/fleet-cap.md#state): the rate, the first free slot and the last
 * decrease. `version` counts writes, and every write is conditional on the version it read.
 */
export interface Schedule {
  /** Writes per second the fleet may start against the prefix (on the rate grid). */
  readonly rate: number;
  /** Epoch ms of the first free slot ("theoretical arrival time"): bookings start at it, or now if later. */
  readonly freeAt: number;
  /** Epoch ms of the last decrease (0: never). */
  readonly decreasedAt: number;
  /** Writes applied to the item since it was created. */
  readonly version: number;
  /** The booking or report id of the last write: tells a write whose answer was lost that it landed. */
  readonly by: string;
}

/** The fields a write sets (the version and writer come from the write itself). */
export type ScheduleChange = Pick<Schedule, 'rate' | 'freeAt' | 'decreasedAt'>;

/**
 * Rates are kept on a grid of a millionth of a write per second, so a rate reads back from DynamoDB as the
 * number it was written as (a report compares the rate it booked at with the stored one).
 */
export function onRateGrid(rate: number): number {
  return Math.round(rate * 1e6) / 1e6;
}

/** `rate` rounded down to the grid (a budget never exceeds its ceiling by rounding). */
export function floorToRateGrid(rate: number): number {
  return Math.floor(rate * 1e6 + 1e-3) / 1e6;
}

/** A booking as planned from one read of the schedule. */
export interface PlannedBooking {
  /** Slots are spaced at this many writes per second (the stored rate, at most the caller's ceiling). */
  readonly rate: number;
  readonly startAt: number;
  readonly endsAt: number;
  readonly writes: number;
  /** Whether it queued behind others' slots: its first slot is later than it asked (demand exceeded the rate). */
  readonly queued: boolean;
  /** The schedule after the booking: only `freeAt` moves. */
  readonly change: ScheduleChange;
}

/**
 * Plans booking `writes` slots at `now` (GCRA): the first slot is the schedule's first free one, or the
 * earliest start asked (now by default) if that is later (unused slots are not banked: no burst after a
 * pause); the slots end by `writeBy` (fewer writes when not all fit) and, while the rate climbs (never
 * decreased, under `ceiling`), span at most `spanMs` (one slot at least); the schedule's first free slot moves
 * to where they end. `undefined` when the first slot is after `latestStart` or not one slot fits before
 * `writeBy`.
 */
export function planBooking(
  schedule: Schedule,
  ceiling: number,
  now: number,
  {
    writes,
    latestStart,
    writeBy,
    earliestStart = now,
    spanMs = Number.POSITIVE_INFINITY,
  }: {
    writes: number;
    latestStart: number;
    writeBy: number;
    earliestStart?: number | undefined;
    spanMs?: number | undefined;
  },
): PlannedBooking | undefined {
  const rate = Math.min(schedule.rate, ceiling);
  const asked = Math.max(now, earliestStart);
  const startAt = Math.max(asked, schedule.freeAt);
  if (startAt > latestStart) return undefined;
  const intervalMs = 1000 / rate;
  const fit = Math.floor((writeBy - startAt) / intervalMs);
  // Only a climbing rate needs its rounds short (it doubles per round); once it has found its limit, a
  // booking takes every write asked, so holders write one after the other rather than in turns.
  const climbing = schedule.decreasedAt === 0 && rate < ceiling;
  const span = climbing ? Math.max(1, Math.floor(spanMs / intervalMs)) : Number.POSITIVE_INFINITY;
  const booked = Math.min(writes, fit, span);
  if (booked < 1) return undefined;
  // Whole ms, rounded up: the next booking never starts inside this one's last interval.
  const endsAt = Math.ceil(startAt + booked * intervalMs);
  return {
    rate,
    startAt,
    endsAt,
    writes: booked,
    queued: startAt > asked,
    change: { rate: schedule.rate, freeAt: endsAt, decreasedAt: schedule.decreasedAt },
  };
}

/** What a report needs of its booking: the rate the schedule had, and when the booking was made. */
export interface BookedFrom {
  /** The stored rate the booking read (before the caller's ceiling). */
  readonly rate: number;
  readonly bookedAt: number;
}

/**
 * The schedule after a booking's report (docs/fleet-cap.md#the-control-law), or `undefined` when it moves
 * nothing: the rate moved since the booking (no stale steps: a step is taken from the rate it saw); the
 * law holds the rate; or a decrease already followed the booking (one decrease per round of bookings). A
 * decrease rescales the slots booked ahead (`freeAt - now` of them at the old rate take `old / new` as long
 * at the new one), so the writes already booked are spread at the new rate before anyone books after them.
 * An increase leaves them where they are: a queued holder writes more in the same window from its turn,
 * so a booking after them still starts where they end.
 */
export function planStep(
  schedule: Schedule,
  booking: BookedFrom,
  round: WriteRound,
  ceiling: number,
  now: number,
): ScheduleChange | undefined {
  if (schedule.rate !== booking.rate) return undefined;
  const after = onRateGrid(
    nextRate(schedule.rate, round, ceiling, {
      sinceDecreaseMs: now - schedule.decreasedAt,
      roundMs: now - booking.bookedAt,
      limitFound: schedule.decreasedAt > 0,
    }),
  );
  if (after === schedule.rate) return undefined;
  const decrease = after < schedule.rate;
  if (decrease && !(schedule.decreasedAt < booking.bookedAt)) return undefined;
  const ahead = Math.max(0, schedule.freeAt - now);
  return {
    rate: after,
    freeAt: !decrease || ahead === 0 ? schedule.freeAt : Math.ceil(now + (ahead * schedule.rate) / after),
    decreasedAt: decrease ? now : schedule.decreasedAt,
  };
}
