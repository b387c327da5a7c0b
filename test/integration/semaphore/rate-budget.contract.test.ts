// The RateBudget contract (docs/fleet-cap.md), one suite over both implementations: MemoryRateBudget and
// DynamoRateBudget on dynalite. Clocks are injected; lost races are observed through their backoffs; what a
// call wrote is read straight from where the budget keeps its item.
import { beforeAll, describe, expect, it } from 'vitest';
import type { RateBooking, RateBudget, WriteRound } from '../../../lib/semaphore/index.js';
import type { Schedule } from '../../../lib/semaphore/rate-schedule.js';
import { PROBE_HOLD_MS } from '../../../lib/semaphore/tuning.js';
import {
  type BudgetBackend,
  budgetName,
  dynamoBackend,
  manualClock,
  memoryBackend,
  overlapping,
  peakSlots,
  slotsOf,
} from './support/budget.js';

const CLEAN: WriteRound = { accepted: 100, throttled: 0, starved: false };
const STARVED: WriteRound = { accepted: 100, throttled: 0, starved: true };
const HALF_REFUSED: WriteRound = { accepted: 50, throttled: 50, starved: false };
const EMPTY: WriteRound = { accepted: 0, throttled: 0, starved: false };
const FAR = 600_000;

describe.each([memoryBackend(), dynamoBackend()])('RateBudget contract: $kind', (backend: BudgetBackend) => {
  beforeAll(() => backend.setup());

  type Clock = ReturnType<typeof manualClock>;
  /** A budget of `ceiling` under a fresh name, on a manual clock. */
  const fresh = (label: string, ceiling: number, clock: Clock = manualClock()) => {
    const name = budgetName(label);
    const config = { name, ceiling, now: clock.now, random: clock.random };
    return { name, clock, config, budget: backend.budget(config) };
  };
  /** Books on `b`'s clock: no latest start or cutoff within the test unless given. */
  const book = (
    b: { budget: RateBudget; clock: { now(): number } },
    writes: number,
    more: { latestStart?: number; writeBy?: number; signal?: AbortSignal } = {},
  ) =>
    b.budget.book({
      writes,
      latestStart: more.latestStart ?? b.clock.now() + FAR,
      writeBy: more.writeBy ?? b.clock.now() + FAR,
      ...(more.signal === undefined ? {} : { signal: more.signal }),
    });
  const stored = async (name: string): Promise<Schedule> => {
    const item = await backend.stored(name);
    if (item === undefined) throw new Error(`no item for ${name}`);
    return item;
  };

  it('books from now on a free schedule, and the next booking from where the last one ends', async () => {
    const b = fresh('book', 10);
    const t0 = b.clock.now();
    const first = await book(b, 5);
    expect(first).toMatchObject({
      rate: 10,
      startAt: t0,
      endsAt: t0 + 500,
      writes: 5,
      bookedAt: t0,
      queued: false,
    });
    expect(await stored(b.name)).toMatchObject({ rate: 10, freeAt: t0 + 500, decreasedAt: 0, version: 1 });
    b.clock.advance(100);
    const second = await book(b, 3);
    expect(second).toMatchObject({
      startAt: t0 + 500,
      endsAt: t0 + 800,
      writes: 3,
      bookedAt: t0 + 100,
      queued: true,
    });
    const item = await stored(b.name);
    expect(item).toMatchObject({ freeAt: t0 + 800, version: 2 });
    expect(item.by).not.toBe('');
    expect(b.clock.backoffs).toBe(0);
  });

  it('banks no unused slots: after a pause the next booking starts now, spaced at the rate', async () => {
    const b = fresh('no-bank', 10);
    await book(b, 5);
    b.clock.advance(10_000);
    const t = b.clock.now();
    const after = await book(b, 20);
    expect(after).toMatchObject({ startAt: t, endsAt: t + 2_000, writes: 20, queued: false });
    expect(peakSlots(slotsOf(after))).toBe(10);
  });

  it('books fewer writes when not all fit before writeBy, and none when not one does', async () => {
    const b = fresh('write-by', 10);
    const t0 = b.clock.now();
    const partial = await book(b, 100, { writeBy: t0 + 2_599 });
    expect(partial).toMatchObject({ writes: 25, startAt: t0, endsAt: t0 + 2_500 });
    const version = (await stored(b.name)).version;
    await expect(book(b, 1, { writeBy: t0 + 2_599 })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
      semaphore: b.name,
      freeAt: t0 + 2_500,
    });
    expect(await stored(b.name)).toMatchObject({ version, freeAt: t0 + 2_500 });
  });

  it('rejects at once, saying when the first free slot is, when the schedule is booked past latestStart', async () => {
    const b = fresh('latest', 10);
    const t0 = b.clock.now();
    await book(b, 100);
    const latestStart = t0 + 9_999;
    await expect(book(b, 1, { latestStart })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
      semaphore: b.name,
      deadline: latestStart,
      freeAt: t0 + 10_000,
    });
    expect(b.clock.backoffs).toBe(0);
    expect(await stored(b.name)).toMatchObject({ version: 1, freeAt: t0 + 10_000 });
    expect((await book(b, 1, { latestStart: t0 + 10_000 })).startAt).toBe(t0 + 10_000);
  });

  it('a booking whose signal is aborted rejects with its reason and books nothing', async () => {
    const b = fresh('abort', 10);
    const controller = new AbortController();
    const reason = new Error('invocation ending');
    controller.abort(reason);
    await expect(book(b, 5, { signal: controller.signal })).rejects.toBe(reason);
    expect(await backend.stored(b.name)).toBeUndefined();
  });

  it('a booking without a signal whose writeBy is weeks away books: its bound at writeBy does not overflow a timer', async () => {
    const b = fresh('far', 10);
    const t0 = b.clock.now();
    const booking = await book(b, 5, { writeBy: t0 + 30 * 86_400_000 });
    // A timer past 2^31 ms fires at once: a bound set that way aborts the requests of a booking that waits on them.
    expect(booking).toMatchObject({ startAt: t0, writes: 5 });
    await expect(book(b, 5, { writeBy: t0 + 30 * 86_400_000 })).resolves.toMatchObject({ startAt: t0 + 500 });
  });

  it('no two bookings share a slot: concurrent bookers, checked on the slots and on the item', async () => {
    const name = budgetName('contend');
    const ceiling = 50;
    const clock = manualClock({ jitter: 0 });
    const bookings: RateBooking[] = [];
    const booker = async (seed: number) => {
      const budget = backend.budget({ name, ceiling, now: clock.now, random: clock.random });
      for (let cycle = 0; cycle < 5; cycle++) {
        const writes = 1 + ((seed * 7 + cycle * 3) % 9);
        bookings.push(
          await budget.book({ writes, latestStart: clock.now() + FAR, writeBy: clock.now() + FAR }),
        );
        clock.advance((seed + cycle) % 3);
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, seed) => booker(seed)));
    expect(bookings).toHaveLength(40);
    // Contended: some bookings lost a race and read again, so the condition on the version was exercised.
    expect(clock.backoffs).toBeGreaterThan(0);
    expect(overlapping(bookings)).toEqual([]);
    expect(peakSlots(bookings.flatMap(slotsOf))).toBeLessThanOrEqual(ceiling);
    const last = Math.max(...bookings.map((x) => x.endsAt));
    // Every booking landed once: one write each, and the schedule ends where the last of them does.
    expect(await stored(name)).toMatchObject({ rate: ceiling, freeAt: last, version: 40 });
  });

  it('a step that moves nothing writes nothing; a decrease rescales the slots ahead and is followed', async () => {
    const b = fresh('decrease', 100);
    const t0 = b.clock.now();
    const first = await book(b, 10);
    const second = await book(b, 50);
    expect(second.endsAt).toBe(t0 + 600);
    await expect(second.step(CLEAN)).resolves.toEqual({ rate: 100, decreasedAt: 0 });
    await second.report(STARVED);
    expect(await stored(b.name)).toMatchObject({ rate: 100, version: 2 });
    b.clock.advance(1);
    await expect(first.step(HALF_REFUSED)).resolves.toEqual({ rate: 50, decreasedAt: t0 + 1 });
    // 599 ms booked ahead at 100/s take twice as long at 50/s.
    expect(await stored(b.name)).toMatchObject({
      rate: 50,
      freeAt: t0 + 1 + 1_198,
      decreasedAt: t0 + 1,
      version: 3,
    });
    // An empty round reads where the schedule stands, writing nothing.
    await expect(second.step(EMPTY)).resolves.toEqual({ rate: 50, decreasedAt: t0 + 1 });
    const next = await book(b, 5);
    expect(next).toMatchObject({ rate: 50, startAt: t0 + 1_199, endsAt: t0 + 1_299, bookedAt: t0 + 1 });
    expect(await stored(b.name)).toMatchObject({ version: 4 });
  });

  it('an increase never pulls the slots ahead in: they were booked at the old rate, and are used at it', async () => {
    const b = fresh('increase', 64);
    b.clock.advance(1);
    await (await book(b, 1)).report(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ rate: 32 });
    b.clock.advance(PROBE_HOLD_MS);
    const prober = await book(b, 1);
    // 64 writes at 32/s: booked 2 s ahead of the next one.
    const ahead = await book(b, 64);
    // An increase adds a step per second its booking ran at the rate.
    b.clock.advance(1_000);
    await prober.report(STARVED);
    expect(await stored(b.name)).toMatchObject({ rate: 34 });
    const after = await book(b, 34);
    expect(after.startAt).toBeGreaterThanOrEqual(ahead.endsAt);
    expect(overlapping([prober, ahead, after])).toEqual([]);
    expect(peakSlots([prober, ahead, after].flatMap(slotsOf))).toBeLessThanOrEqual(34);
  });

  it('a step follows a decrease another report made: its later steps start from the new rate', async () => {
    const b = fresh('follow', 100);
    const holder = await book(b, 10);
    const other = await book(b, 10);
    b.clock.advance(1);
    await other.report(HALF_REFUSED);
    b.clock.advance(1);
    // Its own round from before the decrease is stale: dropped, but the decrease is followed.
    await expect(holder.step(HALF_REFUSED)).resolves.toEqual({ rate: 50, decreasedAt: b.clock.now() - 1 });
    expect(await stored(b.name)).toMatchObject({ rate: 50, version: 3 });
    b.clock.advance(1);
    await holder.report(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ rate: 25, decreasedAt: b.clock.now(), version: 4 });
  });

  it('decreases once per round of bookings: a booking made before the last decrease does not decrease again', async () => {
    // Ceiling 64: an increase adds 2.
    const b = fresh('round', 64);
    const first = await book(b, 1);
    const second = await book(b, 1);
    b.clock.advance(10);
    await first.report(HALF_REFUSED);
    const afterDecrease = await stored(b.name);
    expect(afterDecrease).toMatchObject({ rate: 32, decreasedAt: b.clock.now() });
    // Once the probe hold has passed, sixteen starved reports bring it back to the 64 the second booking read.
    b.clock.advance(PROBE_HOLD_MS);
    for (let i = 0; i < 16; i++) {
      const prober = await book(b, 1);
      b.clock.advance(1_000);
      await prober.report(STARVED);
    }
    expect(await stored(b.name)).toMatchObject({ rate: 64, decreasedAt: afterDecrease.decreasedAt });
    const version = (await stored(b.name)).version;
    await second.report(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ rate: 64, version });
    // A booking made after that decrease decreases.
    b.clock.advance(1);
    await (await book(b, 1)).report(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ rate: 32, decreasedAt: b.clock.now() });
  });

  it('holds after a decrease: a starved clean report increases only once PROBE_HOLD_MS have passed', async () => {
    const b = fresh('hold', 100);
    b.clock.advance(1);
    await (await book(b, 1)).report(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ rate: 50 });
    // Booked a second before its report (a whole step's worth), reported 1 ms before the hold ends.
    b.clock.advance(PROBE_HOLD_MS - 1_001);
    const early = await book(b, 1);
    b.clock.advance(1_000);
    await early.report(STARVED);
    expect(await stored(b.name)).toMatchObject({ rate: 50 });
    const prober = await book(b, 1);
    b.clock.advance(1_000);
    await prober.report(STARVED);
    expect(await stored(b.name)).toMatchObject({ rate: 50 + 100 / 32 });
  });

  it('drops stale steps: two reports from bookings made at the same rate step it once', async () => {
    const b = fresh('stale', 100);
    b.clock.advance(1);
    await (await book(b, 1)).report(HALF_REFUSED);
    b.clock.advance(PROBE_HOLD_MS);
    const bookings = [await book(b, 1), await book(b, 1)];
    b.clock.advance(1_000);
    await Promise.all(bookings.map((booking) => booking.report(STARVED)));
    expect(await stored(b.name)).toMatchObject({ rate: 53.125 });
  });

  it('reports once: a second report returns the first one and writes nothing more', async () => {
    const b = fresh('once', 100);
    const booking = await book(b, 1);
    b.clock.advance(1);
    const first = booking.report(HALF_REFUSED);
    expect(booking.report(HALF_REFUSED)).toBe(first);
    await first;
    const after = await stored(b.name);
    expect(after).toMatchObject({ rate: 50 });
    b.clock.advance(1);
    await booking.report(HALF_REFUSED);
    expect(await stored(b.name)).toEqual(after);
  });

  it('a restart (a new budget on the same storage) reads the stored schedule back', async () => {
    const b = fresh('restart', 100);
    b.clock.advance(1);
    await (await book(b, 10)).report(HALF_REFUSED);
    const freeAt = (await stored(b.name)).freeAt;
    const restarted = { ...b, budget: backend.budget(b.config) };
    expect(await book(restarted, 10)).toMatchObject({ rate: 50, startAt: freeAt, endsAt: freeAt + 200 });
  });

  it('a process with a lower ceiling books at its ceiling, and its report brings the rate down to it', async () => {
    const high = fresh('ceiling', 100);
    const t0 = high.clock.now();
    // The item is created at the fleet's ceiling.
    expect(await book(high, 1)).toMatchObject({ rate: 100, endsAt: t0 + 10 });
    const low = { ...high, budget: backend.budget({ ...high.config, ceiling: 40 }) };
    const booking = await book(low, 4);
    expect(booking).toMatchObject({ rate: 40, startAt: t0 + 10, endsAt: t0 + 110 });
    // The stored rate stays the fleet's until a report moves it.
    expect(await stored(high.name)).toMatchObject({ rate: 100, freeAt: t0 + 110 });
    await booking.report(CLEAN);
    // 110 ms booked ahead at 100/s take 275 ms at 40/s.
    expect(await stored(high.name)).toMatchObject({ rate: 40, decreasedAt: t0, freeAt: t0 + 275 });
    expect(await book(high, 4)).toMatchObject({ rate: 40, startAt: t0 + 275, endsAt: t0 + 375 });
  });

  it('clocks that disagree shift a booking by at most their skew', async () => {
    const skewMs = 40;
    const real = manualClock();
    const behind = { now: () => real.now() - skewMs, random: real.random };
    const b = fresh('skew', 100, real);
    const late = { ...b, clock: behind, budget: backend.budget({ ...b.config, now: behind.now }) };
    // The clock behind books first: its slots are its clock's, so in real time they start skewMs later.
    const first = await book(late, 10);
    const second = await book(b, 10);
    const firstReal = { ...first, startAt: first.startAt + skewMs, endsAt: first.endsAt + skewMs };
    expect(second.startAt).toBeLessThan(firstReal.endsAt);
    expect(firstReal.endsAt - second.startAt).toBeLessThanOrEqual(skewMs);
    // The clock ahead books first: the one behind starts after it, late by the skew, never inside it.
    const third = await book(late, 10);
    expect(third.startAt + skewMs).toBeGreaterThanOrEqual(second.endsAt);
  });
});
