// The fleet cap's rate invariant, what the schedule promises
// (docs/fleet-cap.md, "Why the fleet never exceeds the rate"): the writes S3 accepted on a prefix in any
// short window are no more than the slots booked in its schedule over that window, plus the retries. Both
// suites feed it the same two logs: the writes their S3 proxy let through (times of arrival) and the
// bookings (from the handler's logged budgets, lib/local/pipeline-process/logged-budgets.ts).
import type { ProxiedCall } from '../../../lib/local/faults/fault-proxy.js';
import { SLOT_CATCH_UP_MS } from '../../../lib/semaphore/tuning.js';

/** Slots a holder booked, and what it did with them. */
export interface BookedSlots {
  readonly fence: string;
  /** Writes per second the slots are spaced at. */
  readonly rate: number;
  /** Epoch ms of the first slot. */
  readonly startAt: number;
  /** Slots booked: one every `1000 / rate` ms from `startAt`. */
  readonly writes: number;
  /**
   * Decreases its holder followed, in order: from `at` on, its slots are stretched to `rate` (the schedule's
   * rescale, docs/fleet-cap.md#the-control-law), and it paces at `rate`.
   */
  readonly decreases: readonly { readonly at: number; readonly rate: number }[];
  /**
   * The raised rate its holder took at its first slot (a queued booking whose schedule's rate rose since):
   * from `at` to the booking's end its slots are spaced at `rate` (the same window, more slots), and the
   * decreases it followed after stretch those.
   */
  readonly raised?: { readonly at: number; readonly rate: number };
  /** S3 write requests its holder started under it (undefined: not known, its process was killed). */
  readonly attempts: number | undefined;
  /** Epoch ms its writes had all started by: its report (writes drained), or its process's death. */
  readonly until: number;
}

/** How the check reads the logs. */
export interface RateCheckOptions {
  /** The sliding window, ms. @default 250 */
  readonly windowMs?: number;
  /**
   * How late the proxy may stamp a write the pool started (ms): the SDK's middleware and the loopback hop
   * run on event loops, so up to the longest loop stall in between, plus a few ms of transit. A function
   * gives it per window (by the window's start), from stalls measured over time.
   */
  readonly skewMs: number | ((t: number) => number);
  /**
   * Writes started outside any booking that are allowed anyway (epoch ms each): a tenant with few writes in
   * its batch writes without one (`SMALL_TENANTS.writes`), bounded only by its writes in flight.
   * @default []
   */
  readonly unbooked?: readonly number[];
}

/**
 * Writes per booking a window may hold above the slots it counts. A holder's pool starts writes at most
 * one per `1000 / rate` ms, none before the booking's first slot, and a start late by at most
 * `SLOT_CATCH_UP_MS` keeps its slot (later, the pace restarts from it): so its starts are a sequence as
 * sparse as its slots, shifted against them, and a window holds at most one start more than slots.
 */
export const BURST_PER_BOOKING = 1;

/** Default window: a quarter of a second, short enough that a booking's second of writes cannot hide in it. */
export const RATE_WINDOW_MS = 250;

/** Slot times of a booking as booked (raised at its first slot), and as stretched by the decreases its holder followed. */
interface SlotTimes {
  readonly booking: BookedSlots;
  readonly booked: readonly number[];
  readonly stretched: readonly number[];
  /** Slots it holds: as booked, or as many as its window holds at the raised rate. */
  readonly held: number;
  /** The rate its slots are spaced at before any decrease: booked, or raised. */
  readonly slotRate: number;
  /** The rate it paces at in the end (its last decrease followed, else its own). */
  readonly finalRate: number;
  /** Where its slots end, booked, and where its retries may go on: to `until`. */
  readonly endsAt: number;
}

function slotTimes(booking: BookedSlots): SlotTimes {
  const interval = 1000 / booking.rate;
  const endsAt = booking.startAt + booking.writes * interval;
  let booked = Array.from({ length: booking.writes }, (_, j) => booking.startAt + j * interval);
  let rate = booking.rate;
  const raised = booking.raised;
  if (raised !== undefined && raised.rate > rate) {
    const before = booked.filter((t) => t < raised.at);
    const from = Math.max(raised.at, booking.startAt);
    const after = Array.from(
      { length: Math.max(0, Math.ceil(((endsAt - from) * raised.rate) / 1000)) },
      (_, j) => from + (j * 1000) / raised.rate,
    );
    booked = [...before, ...after];
    rate = raised.rate;
  }
  const slotRate = rate;
  let stretched = booked;
  for (const d of booking.decreases) {
    if (!(d.rate < rate)) continue;
    const k = rate / d.rate;
    stretched = stretched.map((t) => (t > d.at ? d.at + (t - d.at) * k : t));
    rate = d.rate;
  }
  return { booking, booked, stretched, held: booked.length, slotRate, finalRate: rate, endsAt };
}

/** How many of the sorted `times` lie in `[from, to]`. */
function countIn(times: readonly number[], from: number, to: number): number {
  const lower = (x: number, strict: boolean) => {
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (strict ? times[mid]! <= x : times[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return lower(to, true) - lower(from, false);
}

/**
 * What the schedule allows a window whose slots lie in `[from, to]`: per booking the slots there, as booked
 * or as stretched by the decreases its holder followed (whichever is more: a holder follows from the moment
 * it learns of the decrease), one start more (`BURST_PER_BOOKING`), and its retries: the writes it started
 * beyond its slots go through the same pacer, after its last slot and before its report, so a window holds
 * no more of them than its pace fits there, nor more than it had.
 */
function allowedBy(slots: readonly SlotTimes[], from: number, to: number): number {
  let allowed = 0;
  for (const s of slots) {
    const { booking } = s;
    if (booking.startAt > to || booking.until < from) continue;
    allowed += Math.max(countIn(s.booked, from, to), countIn(s.stretched, from, to)) + BURST_PER_BOOKING;
    const extra =
      booking.attempts === undefined ? Number.POSITIVE_INFINITY : Math.max(0, booking.attempts - s.held);
    const tailFrom = Math.max(from, s.endsAt - 1000 / s.slotRate);
    const tailTo = Math.min(to, booking.until);
    if (extra > 0 && tailTo >= tailFrom)
      allowed += Math.min(extra, Math.floor(((tailTo - tailFrom) * s.finalRate) / 1000) + 1);
  }
  return allowed;
}

/**
 * Every window `[t, t + windowMs]` starting at an accepted write `t` whose writes exceed what the bookings
 * allow over `[t - skew - SLOT_CATCH_UP_MS, t + windowMs]` (a write the proxy stamped at `t` started at most
 * `skew` earlier, and kept a slot at most the catch-up before its start); empty when the prefix kept to its
 * schedule. `writes`: arrival times (epoch ms) of the writes S3 accepted on one prefix; `bookings`: every
 * booking of that prefix's schedule.
 */
export function rateViolations(
  prefix: string,
  writes: readonly number[],
  bookings: readonly BookedSlots[],
  options: RateCheckOptions,
): string[] {
  const windowMs = options.windowMs ?? RATE_WINDOW_MS;
  const sorted = [...writes].sort((a, b) => a - b);
  const unbooked = [...(options.unbooked ?? [])].sort((a, b) => a - b);
  const slots = bookings.map(slotTimes);
  const violations: string[] = [];
  let end = 0;
  for (let i = 0; i < sorted.length; i++) {
    const t = sorted[i]!;
    while (end < sorted.length && sorted[end]! <= t + windowMs) end++;
    const count = end - i;
    const skewMs = typeof options.skewMs === 'number' ? options.skewMs : options.skewMs(t);
    const from = t - skewMs - SLOT_CATCH_UP_MS;
    const to = t + windowMs;
    const allowed = countIn(unbooked, t - skewMs, to) + allowedBy(slots, from, to);
    if (count > allowed) {
      violations.push(
        `${prefix}: ${count} writes accepted in ${windowMs} ms from ${new Date(t).toISOString()}, the schedule allows ${allowed} (skew ${skewMs} ms)`,
      );
      // One report per burst: skip to the window's end.
      i = end - 1;
    }
  }
  return violations;
}

/**
 * The accepted writes (arrival times) that started outside every booking: before its first slot, or after
 * its report (`skewMs`: how late the proxy may stamp a write). A large tenant never writes outside one.
 */
export function writesOutsideBookings(
  writes: readonly number[],
  bookings: readonly BookedSlots[],
  skewMs: number,
): number[] {
  return writes.filter((t) => !bookings.some((b) => t >= b.startAt && t <= b.until + skewMs));
}

/** The most writes of any window of `windowMs` over `writes` (figures for the reports). */
export function peakWindowCount(writes: readonly number[], windowMs = RATE_WINDOW_MS): number {
  const sorted = [...writes].sort((a, b) => a - b);
  let peak = 0;
  let end = 0;
  for (let i = 0; i < sorted.length; i++) {
    while (end < sorted.length && sorted[end]! <= sorted[i]! + windowMs) end++;
    peak = Math.max(peak, end - i);
  }
  return peak;
}

const WRITE_METHODS = new Set(['PUT', 'POST', 'DELETE']);

/**
 * Arrival times of the writes S3 accepted on `prefix` of `bucket` (path-style requests through the fault
 * proxy): forwarded to the store, whatever it answered (a conditional PUT refused with 412 still counts
 * against the prefix's rate), not those the proxy refused or held itself.
 */
export function acceptedWrites(calls: readonly ProxiedCall[], bucket: string, prefix: string): number[] {
  return calls
    .filter(
      (c) =>
        WRITE_METHODS.has(c.call.method.toUpperCase()) &&
        c.call.url.startsWith(`/${bucket}/`) &&
        c.call.key.startsWith(prefix) &&
        (c.fault === undefined || c.fault === 'unknown-outcome' || c.fault === 'delay'),
    )
    .map((c) => c.at);
}
