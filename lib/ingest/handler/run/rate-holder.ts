import { isThrottling } from '../../../errors/classify.js';
import type { PoolEvents } from '../../../pool/events.js';
import { sleep } from '../../../semaphore/backoff.js';
import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import { nextRate } from '../../../semaphore/rate-law.js';
import type { RateBooking, RateBudget } from '../../../semaphore/rate-types.js';
import { MIN_ROUND_WRITES, ROUND_MS, SLOT_CATCH_UP_MS } from '../../../semaphore/tuning.js';
import { drainBy } from './drain-by.js';
import type { WriteWatch } from './prefix-write-counts.js';
import { type PacedTarget, RatePace, type RefusalEvents } from './rate-pace.js';

/**
 * Builds the budget of one prefix, `(name, ceiling, startRate) => RateBudget`; called again after a cache
 * eviction. `startRate`: where the budget starts when its item does not exist yet (undefined: its ceiling).
 */
export type RateBudgetFactory = (name: string, ceiling: number, startRate?: number) => RateBudget;

/** A tenant's pool as a rate holder steers it (`ExecutorPool` fits). */
export interface RateHolderPool extends PacedTarget, RefusalEvents {
  setConcurrency(n: number): void;
  /** Tasks not running (queued, or waiting to retry): the writes a holder still has to start. */
  readonly waiting: number;
  drain?(): Promise<void>;
  on(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  on(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  on(event: 'pool:taskQueued', listener: (e: PoolEvents['pool:taskQueued']) => void): void;
  on(event: 'pool:taskRetry', listener: (e: PoolEvents['pool:taskRetry']) => void): void;
  off(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  off(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  off(event: 'pool:taskQueued', listener: (e: PoolEvents['pool:taskQueued']) => void): void;
  off(event: 'pool:taskRetry', listener: (e: PoolEvents['pool:taskRetry']) => void): void;
}

/** One tenant's writes in this invocation, as its holder sees them. */
export interface RateHolderRequest {
  readonly pool: RateHolderPool;
  /** Writes the tenant has to make (records, not attempts). */
  readonly writes: number;
  /** Requests in flight the pool may have while it writes. */
  readonly inFlight: number;
  /** The longest it waits for its first slot (a tenant whose records can be deferred). @default half the time left */
  readonly maxWaitMs?: number | undefined;
  /**
   * The prefixes its writes spread over (a sharded tenant's: the fewest shards of its resources). A refusal
   * comes from one of them, which sees this share of the writes: a round's share is trusted once it holds
   * MIN_ROUND_WRITES writes to each (docs/fleet-cap.md#pace).
   * @default 1
   */
  readonly spreadOver?: number | undefined;
}

/** The invocation's bounds on a holder. */
export interface RateWindow {
  /** Epoch ms: the invocation's cutoff; no write starts after it. */
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** How long the report may take after the work. */
  readonly releaseTimeoutMs: number;
}

/**
 * What a holder did: it wrote at `rate` writes/s (`reportErrors`: the reports that failed, one per booking at
 * most, a round's before a rebooking and the last; each loses the budget's step and changes nothing about
 * the writes), or could not have slots (`outOfTurn`: the schedule is booked past its latest start).
 */
export type HolderResult =
  | { readonly rate: number; readonly reportErrors?: readonly unknown[] }
  | { readonly unavailable: unknown; readonly outOfTurn?: true };

/** Attempts the pool settled while a booking was being written: a count of writes when the store counts none. */
class AttemptCount implements WriteWatch {
  count = 0;
  readonly #completed = () => {
    this.count++;
  };
  readonly #failed = (e: PoolEvents['pool:taskError']) => {
    if (isThrottling(e.error)) this.count++;
  };

  constructor(private readonly pool: RateHolderPool) {
    pool.on('pool:taskCompleted', this.#completed);
    pool.on('pool:taskError', this.#failed);
  }

  stop(): void {
    this.pool.off('pool:taskCompleted', this.#completed);
    this.pool.off('pool:taskError', this.#failed);
  }
}

/**
 * One tenant's writes in its prefix's schedule (docs/fleet-cap.md, "What a holder does"): book a slot per
 * write, starting no later than its wait allows (at most half the time left) and ending by the cutoff; sleep
 * until the first slot; pace the pool at the booking's rate (cut per round on refusals, `RatePace`), drain,
 * and report what the writes saw. `writes` counts the prefix's write requests (from the container's store)
 * when given, else every settled attempt counts as a write. `body` writes under the signal it is handed: the
 * cutoff, or sooner a rebooking that failed (its writes left are given up, not held until the cutoff).
 */
export async function runUnderRate(
  budget: RateBudget,
  request: RateHolderRequest,
  window: RateWindow,
  writes: WriteWatch | undefined,
  body: (signal: AbortSignal) => Promise<void>,
  now: () => number = Date.now,
): Promise<HolderResult> {
  // Every booking, the first and each made again, starts no later than the tenant's wait from when it is
  // made (at most half the time left): a schedule booked further ahead leaves the writes out of turn, to be
  // deferred, rather than holding the invocation (and the queue's slot it takes) while others write.
  const latestStartFrom = (at: number) => {
    const leftMs = Math.max(2, window.deadline - at);
    return at + Math.min(request.maxWaitMs ?? leftMs / 2, leftMs / 2);
  };
  const start = now();
  const latestStart = latestStartFrom(start);
  const wanted = Math.max(1, Math.ceil(request.writes));
  let booking: RateBooking;
  // Writes the booking asked for: a booking with fewer slots (its round ends first) or one queued behind
  // others is demand the rate did not meet, what lets the law raise it ("starved").
  let asked = wanted;
  let slots: Slots;
  // How long the last booking's answer took: a booking made again asks for slots no earlier than that
  // from now, so an answer as slow finds them still ahead instead of passed.
  let bookingMs = 0;
  const reportErrors: unknown[] = [];
  try {
    booking = await budget.book({
      writes: wanted,
      latestStart,
      writeBy: window.deadline,
      spanMs: ROUND_MS,
      signal: window.signal,
    });
    bookingMs = now() - start;
    slots = await firstSlot(budget, booking, window.signal, now);
  } catch (err) {
    writes?.stop();
    // Out of turn, aborted, or the store unreachable: only this tenant's writes are redelivered.
    if (window.signal.aborted)
      return { unavailable: new SemaphoreTimeoutError(budget.name, wanted, latestStart) };
    return err instanceof SemaphoreTimeoutError
      ? { unavailable: err, outOfTurn: true }
      : { unavailable: err };
  }
  const counted: WriteWatch = writes ?? new AttemptCount(request.pool);
  const sent = () => counted.count;
  // Writes start at most `rate` per second (reads are not paced: the store enqueues them unpaced). An
  // overloaded round steps the schedule at once, and the pace follows where the schedule then stands (or,
  // when the store cannot say, the law applied to that round); the slots left stretch with it, as the
  // schedule's did.
  const cutTo = (next: number) => {
    const at = now();
    if (next < pace.rate && slots.endsAt > at) {
      slots.endsAt = at + ((slots.endsAt - at) * pace.rate) / next;
      // The allowance lasts as long as the stretched slots.
      request.pool.setStartInterval(1000 / next, {
        catchUpMs: SLOT_CATCH_UP_MS,
        withinMs: slots.endsAt + SLOT_CATCH_UP_MS - at,
      });
    }
    return next;
  };
  const pace: RatePace = new RatePace(
    request.pool,
    request.pool,
    slots.rate,
    sent,
    (round): Promise<number> =>
      booking
        .step(round, { signal: AbortSignal.timeout(window.releaseTimeoutMs) })
        .then(
          (view) => Math.min(view.rate, budget.ceiling),
          () => nextRate(pace.rate, round, budget.ceiling),
        )
        .then((next) => cutTo(next < pace.rate ? next : nextRate(pace.rate, round, budget.ceiling))),
    undefined,
    MIN_ROUND_WRITES * Math.max(1, request.spreadOver ?? 1),
  );
  // No more paced starts than slots booked: retries of refused writes count.
  // ... and none after its last slot (give or take the catch-up), however late a timer fires.
  const allow = (starts: number) =>
    request.pool.setStartInterval(1000 / pace.rate, {
      catchUpMs: SLOT_CATCH_UP_MS,
      starts,
      withinMs: Number.isFinite(starts) ? Math.max(0, slots.endsAt + SLOT_CATCH_UP_MS - now()) : starts,
    });
  // Slots that passed before the holder could use them (an answer that came late, a stretch) are gone:
  // only those still ahead, give or take the catch-up, are its to start.
  const slotsAhead = (booked: number) =>
    Math.min(
      booked,
      Math.max(0, Math.floor(((slots.endsAt + SLOT_CATCH_UP_MS - now()) * slots.rate) / 1000)),
    );
  allow(slotsAhead(slots.writes));
  // The writes' signal: the cutoff, or sooner a rebooking that failed (the writes left have no slot, and
  // holding them until the cutoff would hold the invocation with them).
  const giveUp = new AbortController();
  const writesSignal = AbortSignal.any([window.signal, giveUp.signal]);
  try {
    request.pool.setConcurrency(Math.max(1, request.inFlight));
    const work = body(writesSignal).then(() => drainBy(request.pool, window.signal, window.releaseTimeoutMs));
    let done = false;
    const settled = work.then(
      () => {
        done = true;
      },
      () => {
        done = true;
      },
    );
    // Each pass ends when the slots are over, the writes have settled (then the timer goes too), or the
    // cutoff comes; only the slots' end goes on.
    for (;;) {
      const woken = new AbortController();
      const wake = AbortSignal.any([window.signal, woken.signal]);
      await Promise.race([
        settled.then(() => woken.abort()),
        sleepUntil(slots.endsAt + SLOT_CATCH_UP_MS, wake, now).catch(() => {}),
      ]);
      if (done || window.signal.aborted) break;
      // A cut meanwhile stretched the slots: they are not over yet.
      if (now() < slots.endsAt + SLOT_CATCH_UP_MS) continue;
      // Its slots are over: whatever is left of its allowance (writes that fell behind: a late answer,
      // stalled writes filling the in-flight cap, a stalled event loop) is withdrawn with them.
      allow(0);
      // Writes may still be on their way (an upsert's write follows its read, which takes no slot): wait
      // for the next one to reach the pool and wait there, or for the work to settle. A read reaches it
      // too, and starts at once: nothing waits for a slot then, and the wait goes on.
      let queued = true;
      while (queued && request.pool.waiting === 0) queued = await nextQueued(request.pool, settled);
      if (!queued) break;
      // Writes remain (retries of refused writes, writes that fell behind or came late, more writes than
      // fitted): they wait, and take the next free slots at the end of the schedule rather than anyone
      // else's, as many as are waiting or still to come (one at least: a write is waiting).
      try {
        await pace.settled();
        // Its slots are over, and so is its round: reported now (a lost report loses the step, nothing
        // else), the next booking's writes are the next round. A booking spans a round of the law at most,
        // so a low rate is stepped as often as a high one.
        await booking
          .report(
            { ...pace.sinceCut(), starved: starved(booking, asked) },
            { signal: AbortSignal.any([window.signal, AbortSignal.timeout(window.releaseTimeoutMs)]) },
          )
          .catch((error: unknown) => {
            reportErrors.push(error);
          });
        pace.endRound();
        const bookedAt = now();
        asked = Math.max(1, request.pool.waiting, wanted - sent());
        // Its wait counts from the earliest it asks for: an answer as slow as the last takes none of it.
        const earliestStart = bookedAt + bookingMs;
        booking = await budget.book({
          writes: asked,
          latestStart: latestStartFrom(earliestStart),
          writeBy: window.deadline,
          earliestStart,
          spanMs: ROUND_MS,
          signal: window.signal,
        });
        bookingMs = now() - bookedAt;
        slots = await firstSlot(budget, booking, window.signal, now);
      } catch (error) {
        // No slot within the tenant's wait (out of turn: its writes left are deferred when they can be),
        // aborted, or the store unreachable or throttled (redelivered): the writes left are given up now
        // rather than held by the spent allowance until the cutoff.
        giveUp.abort(error);
        break;
      }
      pace.restart(slots.rate);
      allow(slotsAhead(slots.writes));
    }
    await work;
  } finally {
    pace.stop();
    counted.stop();
    // A step in flight settles first: the report's round starts where it cut, and its cut (which bounds the
    // allowance by the stretched slots) lands before the pool is let go, never after.
    await pace.settled();
    // The pool outlives the holder (the tenant's next batch, booked or not): its writes are not held by a
    // spent or lapsed allowance.
    allow(Number.POSITIVE_INFINITY);
  }
  // The last round: the writes since the pace last followed a decrease (the whole booking when none).
  const report = { ...pace.sinceCut(), starved: starved(booking, asked) };
  try {
    // Reported after the cutoff too, but bounded: a stalled store cannot hold the invocation.
    await booking.report(report, { signal: AbortSignal.timeout(window.releaseTimeoutMs) });
  } catch (error) {
    reportErrors.push(error);
  }
  return reportErrors.length === 0 ? { rate: slots.rate } : { rate: slots.rate, reportErrors };
}

/** Whether demand exceeded the rate: the booking queued behind others, or its round held fewer slots than asked. */
function starved(booking: RateBooking, asked: number): boolean {
  return booking.queued || booking.writes < asked;
}

/**
 * Sleeps until the booking's first slot and resolves the slots to write in. A booking that queued behind
 * others reads the schedule when its turn comes and takes its rate. Decreased after the booking: its slots
 * are stretched as the schedule's were (`freeAt` rescaled around the decrease), so it starts later and paces
 * at the new rate. Increased: its slots keep their window, which holds more writes at the new rate (the
 * schedule grants that rate from now, and the next booking starts where the window ends), and its round
 * runs, and is stepped, from there. A read that fails keeps the booking as made.
 */
async function firstSlot(
  budget: RateBudget,
  booking: RateBooking,
  signal: AbortSignal,
  now: () => number,
): Promise<Slots> {
  const asBooked = {
    rate: Math.min(booking.rate, budget.ceiling),
    endsAt: booking.endsAt,
    writes: booking.writes,
  };
  await sleepUntil(booking.startAt, signal, now);
  if (!booking.queued) return asBooked;
  const view = await booking
    .step({ accepted: 0, throttled: 0, starved: false }, { signal, followIncrease: true })
    .catch(() => undefined);
  if (signal.aborted) throw signal.reason;
  if (view === undefined) return asBooked;
  const rate = Math.min(view.rate, budget.ceiling);
  if (rate > asBooked.rate) {
    const writes = Math.floor(((booking.endsAt - booking.startAt) * rate) / 1000);
    return { rate, endsAt: booking.endsAt, writes: Math.max(booking.writes, writes) };
  }
  // Lower than it booked at: decreased since (its booking read the rate it booked at).
  if (!(rate < asBooked.rate)) return asBooked;
  const stretch = asBooked.rate / rate;
  const startAt = view.decreasedAt + Math.max(0, booking.startAt - view.decreasedAt) * stretch;
  await sleepUntil(startAt, signal, now);
  return { rate, endsAt: startAt + (booking.endsAt - booking.startAt) * stretch, writes: booking.writes };
}

/**
 * The slots a holder writes in: its pace, when its last slot ends (both move when the pace is cut), and how
 * many writes they hold.
 */
interface Slots {
  rate: number;
  endsAt: number;
  writes: number;
}

/**
 * Resolves `true` when a write next waits in the pool: a task enters its queue, or a write in flight is
 * refused and waits to retry (a retry goes back to the queue without entering it anew, so it is no
 * `pool:taskQueued`); `false` when the work settles first (the work is bound by the invocation's signal,
 * so the cutoff ends this wait too).
 */
function nextQueued(pool: RateHolderPool, settled: Promise<void>): Promise<boolean> {
  return new Promise((resolve) => {
    const stop = (waits: boolean) => {
      pool.off('pool:taskQueued', onWaiting);
      pool.off('pool:taskRetry', onWaiting);
      resolve(waits);
    };
    const onWaiting = () => stop(true);
    pool.on('pool:taskQueued', onWaiting);
    pool.on('pool:taskRetry', onWaiting);
    void settled.then(() => stop(false));
  });
}

async function sleepUntil(at: number, signal: AbortSignal, now: () => number): Promise<void> {
  const ms = at - now();
  if (ms > 0) await sleep(ms, signal);
}
