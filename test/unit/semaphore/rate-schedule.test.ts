// A booking and a step as pure functions of the stored schedule (planBooking, planStep), and a booking's
// steps over a store (ScheduledBooking through bookSlots) with the store's reads and writes counted.
import { describe, expect, it } from 'vitest';
import { bookSlots } from '../../../lib/semaphore/book-slots.js';
import type { BudgetContext, BudgetStore } from '../../../lib/semaphore/budget-store.js';
import {
  planBooking,
  planStep,
  type Schedule,
  type ScheduleChange,
} from '../../../lib/semaphore/rate-schedule.js';
import type { WriteRound } from '../../../lib/semaphore/rate-types.js';
import { MIN_BUDGET_SHARE, PROBE_HOLD_MS, ROUND_MS } from '../../../lib/semaphore/tuning.js';

const NOW = 1_700_000_000_000;
const CLEAN: WriteRound = { accepted: 100, throttled: 0, starved: false };
const STARVED: WriteRound = { accepted: 100, throttled: 0, starved: true };
const HALF_REFUSED: WriteRound = { accepted: 50, throttled: 50, starved: false };
const QUARTER_REFUSED: WriteRound = { accepted: 75, throttled: 25, starved: false };
const EMPTY: WriteRound = { accepted: 0, throttled: 0, starved: false };

const schedule = (over: Partial<Schedule> = {}): Schedule => ({
  rate: 100,
  freeAt: 0,
  decreasedAt: 0,
  version: 7,
  by: 'someone',
  ...over,
});
const FAR = { writes: 10, latestStart: NOW + 60_000, writeBy: NOW + 600_000 };

describe('planBooking', () => {
  it('starts at now when the first free slot has passed, and banks none of the slots before it', () => {
    const plan = planBooking(schedule({ freeAt: NOW - 10_000 }), 100, NOW, FAR);
    expect(plan).toEqual({
      rate: 100,
      startAt: NOW,
      endsAt: NOW + 100,
      writes: 10,
      queued: false,
      change: { rate: 100, freeAt: NOW + 100, decreasedAt: 0 },
    });
  });

  it('starts no earlier than the earliest start asked, and is not queued for it', () => {
    const plan = planBooking(schedule({ freeAt: NOW + 10 }), 100, NOW, { ...FAR, earliestStart: NOW + 30 });
    expect(plan).toMatchObject({ startAt: NOW + 30, endsAt: NOW + 130, queued: false });
    expect(plan?.change.freeAt).toBe(NOW + 130);
  });

  it('is queued when others booked past the earliest start asked', () => {
    const plan = planBooking(schedule({ freeAt: NOW + 50 }), 100, NOW, { ...FAR, earliestStart: NOW + 30 });
    expect(plan).toMatchObject({ startAt: NOW + 50, queued: true });
    // An earliest start already passed is now.
    expect(planBooking(schedule(), 100, NOW, { ...FAR, earliestStart: NOW - 30 })).toMatchObject({
      startAt: NOW,
      queued: false,
    });
  });

  it('starts at the first free slot when it is ahead, and moves it past its own slots', () => {
    const plan = planBooking(schedule({ freeAt: NOW + 250, decreasedAt: 5 }), 100, NOW, FAR);
    expect(plan).toMatchObject({ startAt: NOW + 250, endsAt: NOW + 350 });
    expect(plan?.change).toEqual({ rate: 100, freeAt: NOW + 350, decreasedAt: 5 });
  });

  it('ends on a whole ms, rounded up: the next booking never starts inside its last interval', () => {
    const plan = planBooking(schedule({ rate: 3 }), 3, NOW, { ...FAR, writes: 1 });
    expect(plan).toMatchObject({ startAt: NOW, endsAt: NOW + 334 });
  });

  it('books fewer writes when not all fit before writeBy, and none when not one does', () => {
    expect(
      planBooking(schedule({ rate: 10 }), 10, NOW, { ...FAR, writes: 100, writeBy: NOW + 2_599 }),
    ).toMatchObject({
      writes: 25,
      endsAt: NOW + 2_500,
    });
    expect(planBooking(schedule({ rate: 10 }), 10, NOW, { ...FAR, writeBy: NOW + 99 })).toBeUndefined();
    expect(
      planBooking(schedule({ rate: 10, freeAt: NOW + 500 }), 10, NOW, { ...FAR, writeBy: NOW + 599 }),
    ).toBeUndefined();
    expect(
      planBooking(schedule({ rate: 10, freeAt: NOW + 500 }), 10, NOW, { ...FAR, writeBy: NOW + 600 }),
    ).toMatchObject({
      writes: 1,
    });
  });

  it('while the rate climbs (never decreased, under its ceiling), books slots spanning at most spanMs, one slot at least', () => {
    const round = { ...FAR, spanMs: ROUND_MS };
    expect(planBooking(schedule({ rate: 10 }), 100, NOW, { ...round, writes: 100 })).toMatchObject({
      writes: 10,
      endsAt: NOW + ROUND_MS,
    });
    expect(planBooking(schedule({ rate: 10 }), 100, NOW, { ...FAR, writes: 100 })).toMatchObject({
      writes: 100,
    });
    expect(planBooking(schedule({ rate: 0.5 }), 10, NOW, { ...round, writes: 5 })).toMatchObject({
      writes: 1,
      endsAt: NOW + 2_000,
    });
    // The slot must still fit before writeBy.
    expect(
      planBooking(schedule({ rate: 0.5 }), 10, NOW, { ...round, writes: 5, writeBy: NOW + 1_999 }),
    ).toBeUndefined();
  });

  it('once the rate has found its limit (decreased, or at its ceiling), books every write asked whatever spanMs', () => {
    const round = { ...FAR, spanMs: ROUND_MS };
    expect(
      planBooking(schedule({ rate: 10, decreasedAt: NOW - 1 }), 100, NOW, { ...round, writes: 100 }),
    ).toMatchObject({ writes: 100, endsAt: NOW + 10_000 });
    expect(planBooking(schedule({ rate: 10 }), 10, NOW, { ...round, writes: 100 })).toMatchObject({
      writes: 100,
    });
    // A ceiling lowered under the stored rate is the limit too.
    expect(planBooking(schedule({ rate: 20 }), 10, NOW, { ...round, writes: 30 })).toMatchObject({
      writes: 30,
    });
  });

  it('is undefined when the first free slot is past latestStart', () => {
    const booked = schedule({ freeAt: NOW + 1_000 });
    expect(planBooking(booked, 100, NOW, { ...FAR, latestStart: NOW + 999 })).toBeUndefined();
    expect(planBooking(booked, 100, NOW, { ...FAR, latestStart: NOW + 1_000 })?.startAt).toBe(NOW + 1_000);
  });

  it('spaces the slots at a ceiling lower than the stored rate, and leaves the stored rate as it is', () => {
    const plan = planBooking(schedule({ rate: 100 }), 40, NOW, { ...FAR, writes: 4 });
    expect(plan).toMatchObject({ rate: 40, endsAt: NOW + 100, change: { rate: 100, freeAt: NOW + 100 } });
  });
});

describe('planStep', () => {
  const from = { rate: 100, bookedAt: NOW - 1_000 };

  it('decreases in proportion to the share refused and rescales the slots booked ahead', () => {
    const change = planStep(schedule({ freeAt: NOW + 1_000 }), from, QUARTER_REFUSED, 100, NOW);
    // 1,000 ms of slots at 100/s take 1,333.3 ms at 75/s.
    expect(change).toEqual({ rate: 75, freeAt: NOW + 1_334, decreasedAt: NOW });
  });

  it('leaves a first free slot that has passed where it is', () => {
    expect(planStep(schedule({ freeAt: NOW - 5 }), from, HALF_REFUSED, 100, NOW)).toEqual({
      rate: 50,
      freeAt: NOW - 5,
      decreasedAt: NOW,
    });
  });

  it('an increase leaves the slots booked ahead where they are: their holders use them at the old rate', () => {
    const at50 = schedule({ rate: 50, freeAt: NOW + 2_000, decreasedAt: NOW - PROBE_HOLD_MS });
    const change = planStep(at50, { rate: 50, bookedAt: NOW - 1_000 }, STARVED, 100, NOW);
    expect(change).toEqual({ rate: 53.125, freeAt: NOW + 2_000, decreasedAt: NOW - PROBE_HOLD_MS });
  });

  it('a schedule never decreased doubles per second of starved clean rounds (slow start), then climbs additively', () => {
    const fresh = schedule({ rate: 25, decreasedAt: 0 });
    expect(planStep(fresh, { rate: 25, bookedAt: NOW - 1_000 }, STARVED, 100, NOW)).toMatchObject({
      rate: 50,
    });
    const found = schedule({ rate: 25, decreasedAt: NOW - PROBE_HOLD_MS });
    expect(planStep(found, { rate: 25, bookedAt: NOW - 1_000 }, STARVED, 100, NOW)).toMatchObject({
      rate: 28.125,
    });
  });

  it('an increase adds a step per second from the booking to the step: short bookings climb no faster', () => {
    const at50 = schedule({ rate: 50, decreasedAt: NOW - PROBE_HOLD_MS });
    expect(planStep(at50, { rate: 50, bookedAt: NOW - 250 }, STARVED, 100, NOW)).toMatchObject({
      rate: 50.78125,
    });
    expect(planStep(at50, { rate: 50, bookedAt: NOW - 5_000 }, STARVED, 100, NOW)).toMatchObject({
      rate: 53.125,
    });
    // Booked now: it ran no time at the rate.
    expect(planStep(at50, { rate: 50, bookedAt: NOW }, STARVED, 100, NOW)).toBeUndefined();
  });

  it('moves nothing when the law holds the rate', () => {
    expect(planStep(schedule({ freeAt: NOW + 1_000 }), from, CLEAN, 100, NOW)).toBeUndefined();
    expect(planStep(schedule(), from, EMPTY, 100, NOW)).toBeUndefined();
    // At the ceiling, starved: nowhere to go.
    expect(planStep(schedule(), from, STARVED, 100, NOW)).toBeUndefined();
  });

  it('takes no stale steps: the rate moved since the booking drops it', () => {
    expect(planStep(schedule({ rate: 50 }), from, HALF_REFUSED, 100, NOW)).toBeUndefined();
    expect(
      planStep(schedule({ rate: 50 }), { rate: 50.000001, bookedAt: from.bookedAt }, STARVED, 100, NOW),
    ).toBeUndefined();
  });

  it('decreases once per round of bookings: not for a booking made at or before the last decrease', () => {
    const decreased = (at: number) => schedule({ decreasedAt: at });
    expect(planStep(decreased(from.bookedAt), from, HALF_REFUSED, 100, NOW)).toBeUndefined();
    expect(planStep(decreased(from.bookedAt + 1), from, HALF_REFUSED, 100, NOW)).toBeUndefined();
    expect(planStep(decreased(from.bookedAt - 1), from, HALF_REFUSED, 100, NOW)).toMatchObject({ rate: 50 });
  });

  it('probes upward only once PROBE_HOLD_MS have passed since the last decrease', () => {
    const at50 = (decreasedAt: number) => schedule({ rate: 50, decreasedAt });
    const booked = { rate: 50, bookedAt: NOW - 1_000 };
    expect(planStep(at50(NOW - PROBE_HOLD_MS + 1), booked, STARVED, 100, NOW)).toBeUndefined();
    expect(planStep(at50(NOW - PROBE_HOLD_MS), booked, STARVED, 100, NOW)).toMatchObject({ rate: 53.125 });
  });

  it('brings a stored rate above the caller ceiling down to it, as a decrease', () => {
    const change = planStep(schedule({ freeAt: NOW + 100 }), from, CLEAN, 40, NOW);
    expect(change).toEqual({ rate: 40, freeAt: NOW + 250, decreasedAt: NOW });
  });

  it('keeps the rate on the grid and within [ceiling x MIN_BUDGET_SHARE, ceiling]', () => {
    const ceiling = 3500;
    const change = planStep(
      schedule({ rate: ceiling }),
      { rate: ceiling, bookedAt: NOW - 1 },
      { accepted: 989, throttled: 11, starved: false },
      ceiling,
      NOW,
    );
    expect(String(change?.rate)).toBe('3461.5');
    const floor = ceiling * MIN_BUDGET_SHARE;
    const atFloor = schedule({ rate: floor * 1.5 });
    expect(
      planStep(atFloor, { rate: floor * 1.5, bookedAt: NOW - 1 }, HALF_REFUSED, ceiling, NOW)?.rate,
    ).toBe(floor);
    // A rate a millionth wide stays a millionth: it never rounds down to nothing.
    const tiny = planStep(
      schedule({ rate: 0.000001 }),
      { rate: 0.000001, bookedAt: NOW - 1 },
      HALF_REFUSED,
      0.000001,
      NOW,
    );
    expect(tiny).toBeUndefined();
  });
});

/** An in-memory store that counts what it is asked (reads, writes that applied, writes whose condition failed). */
function countingStore(initial?: Schedule) {
  let item = initial;
  const counts = { reads: 0, writes: 0, lost: 0 };
  const store: BudgetStore = {
    read: async () => {
      counts.reads++;
      return item;
    },
    create: async (ceiling) => {
      item ??= { rate: ceiling, freeAt: 0, decreasedAt: 0, version: 0, by: '' };
    },
    write: async (read, change: ScheduleChange, by) => {
      if (item?.version !== read.version) {
        counts.lost++;
        return false;
      }
      counts.writes++;
      item = { ...change, version: read.version + 1, by };
      return true;
    },
  };
  return {
    store,
    counts,
    item: () => item,
    set: (next: Schedule) => {
      item = next;
    },
  };
}

function budgetOver(store: BudgetStore, ceiling = 100) {
  let t = NOW;
  const context: BudgetContext = {
    name: 'unit',
    ceiling,
    startRate: ceiling,
    store,
    now: () => t,
    random: () => 0,
    reportTimeoutMs: 1_000,
  };
  return {
    context,
    advance: (ms: number) => {
      t += ms;
    },
    now: () => t,
    book: (writes = 1) => bookSlots(context, { writes, latestStart: t + 60_000, writeBy: t + 600_000 }),
  };
}

describe('ScheduledBooking', () => {
  it('a report the law holds the rate for costs nothing: no read, no write (docs/fleet-cap.md)', async () => {
    const { store, counts } = countingStore();
    const budget = budgetOver(store);
    const booking = await budget.book();
    const before = { ...counts };
    await booking.report(CLEAN);
    expect(counts).toEqual(before);
    // At the ceiling a starved round has nowhere to go either.
    await (await budget.book()).report(STARVED);
    expect(counts.writes).toBe(before.writes + 1);
    expect(counts.reads).toBe(before.reads + 1);
  });

  it('a report the law would move reads, and writes nothing when the stored rate moved meanwhile', async () => {
    const { store, counts } = countingStore();
    const budget = budgetOver(store, 40);
    const booking = await budget.book();
    // A process of a lower ceiling reads: its clean round brings a stored rate above its ceiling down.
    const low = budgetOver(store, 20);
    const lowBooking = await low.book();
    const before = { ...counts };
    await lowBooking.report(CLEAN);
    expect(counts).toEqual({ ...before, reads: before.reads + 1, writes: before.writes + 1 });
    await booking.report(HALF_REFUSED);
    expect(counts).toEqual({ ...before, reads: before.reads + 2, writes: before.writes + 1 });
  });

  it('reports once: the second call returns the first one and asks the store nothing', async () => {
    const { store, counts } = countingStore();
    const budget = budgetOver(store);
    const booking = await budget.book();
    budget.advance(1);
    const first = booking.report(HALF_REFUSED);
    expect(booking.report(HALF_REFUSED)).toBe(first);
    await first;
    const after = { ...counts };
    await booking.report(HALF_REFUSED);
    expect(counts).toEqual(after);
    expect(after.writes).toBe(2);
  });

  it("a step follows a decrease, another's or its own in the same ms: later steps start from it", async () => {
    const { store, item } = countingStore();
    const budget = budgetOver(store);
    const holder = await budget.book();
    const other = await budget.book();
    budget.advance(1);
    await other.report(HALF_REFUSED);
    budget.advance(1);
    // An empty round reads where the schedule stands, and follows its decrease.
    await expect(holder.step(EMPTY)).resolves.toEqual({ rate: 50, decreasedAt: NOW + 1 });
    budget.advance(1);
    await expect(holder.step(HALF_REFUSED)).resolves.toEqual({ rate: 25, decreasedAt: budget.now() });
    // Followed its own decrease too, though the clock has not moved: its next overloaded rounds step from it.
    await expect(holder.step(HALF_REFUSED)).resolves.toMatchObject({ rate: 12.5 });
    await expect(holder.step(HALF_REFUSED)).resolves.toMatchObject({ rate: 6.25 });
    expect(item()).toMatchObject({ rate: 6.25, version: 6 });
  });

  it('a stale step (the rate moved since its booking) is dropped, writing nothing', async () => {
    const { store, counts } = countingStore();
    const budget = budgetOver(store);
    const holder = await budget.book();
    const other = await budget.book();
    budget.advance(1);
    await other.report(HALF_REFUSED);
    const writes = counts.writes;
    await expect(holder.report(QUARTER_REFUSED)).resolves.toBeUndefined();
    expect(counts.writes).toBe(writes);
  });

  it('a step that loses a race reads again and steps from what it reads', async () => {
    const { store, counts, item, set } = countingStore();
    let race = false;
    const racing: BudgetStore = {
      ...store,
      write: async (read, change, by) => {
        const now = item();
        if (race && now !== undefined) {
          race = false;
          // Another booking lands between this step's read and its write: only freeAt moves.
          set({ ...now, freeAt: now.freeAt + 500, version: now.version + 1, by: 'racer' });
        }
        return store.write(read, change, by);
      },
    };
    const budget = budgetOver(racing);
    const booking = await budget.book(10);
    budget.advance(1);
    race = true;
    await booking.report(HALF_REFUSED);
    // The racer's 500 ms ahead are rescaled with the rest.
    expect(item()).toMatchObject({ rate: 50, freeAt: NOW + 1 + (100 + 500 - 1) * 2, version: 3 });
    expect(counts.lost).toBe(1);
  });
});
